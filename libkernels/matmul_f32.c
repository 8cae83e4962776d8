/* libjit_matmul_f32: batched f32 matrix product over CMSIS-DSP (see libjit_f32.h).
 *
 * Paths, per batch element:
 *   m == 1, rhs [k][n]          vecmat below: blocks of 8 outputs held in registers while one
 *                               pass walks the rows of rhs (x @ W, the MLP layer)
 *   rhs [k][n], n == 1          arm_mat_vec_mult_f32(lhs as [m][k], rhs as a vector)
 *   lhs [m][k], rhs [k][n]      arm_mat_mult_f32
 *   lhs [m][k], rhs [n][k]      arm_mat_vec_mult_f32(rhs as [n][k], lhs row) per lhs row
 *                               (m == 1 is exactly W.x); arm_dot_prod_f32 per output when a
 *                               size does not fit CMSIS-DSP's 16-bit matrix dimensions
 *   lhs [k][m]                  strided loops (vecmat with a strided x, or row dot products)
 * CMSIS-DSP matrices have 16-bit dimensions: larger sizes take the strided loops.
 */
#include "libjit_f32.h"

#include "arm_math.h"

#define U16_MAX 65535

/* out[j] = sum_p x[p*xs] * r[p*ldr + j] for j < n: a row vector times a row-major matrix.
 * Output columns are done 8 (then 4, then 1) at a time with the sums in registers, so every
 * element of r is loaded once and the loads of a block are contiguous. */
static void vecmat(float *out, const float *x, int32_t xs, const float *r, int32_t ldr,
                   int32_t k, int32_t n)
{
  int32_t j = 0;
  for (; j + 8 <= n; j += 8) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f, a5 = 0.0f, a6 = 0.0f, a7 = 0.0f;
    const float *xp = x;
    const float *rp = r + j;
    for (int32_t p = 0; p < k; p++) {
      float v = *xp;
      a0 += v * rp[0];
      a1 += v * rp[1];
      a2 += v * rp[2];
      a3 += v * rp[3];
      a4 += v * rp[4];
      a5 += v * rp[5];
      a6 += v * rp[6];
      a7 += v * rp[7];
      xp += xs;
      rp += ldr;
    }
    out[j + 0] = a0;
    out[j + 1] = a1;
    out[j + 2] = a2;
    out[j + 3] = a3;
    out[j + 4] = a4;
    out[j + 5] = a5;
    out[j + 6] = a6;
    out[j + 7] = a7;
  }
  if (j + 4 <= n) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    const float *xp = x;
    const float *rp = r + j;
    for (int32_t p = 0; p < k; p++) {
      float v = *xp;
      a0 += v * rp[0];
      a1 += v * rp[1];
      a2 += v * rp[2];
      a3 += v * rp[3];
      xp += xs;
      rp += ldr;
    }
    out[j + 0] = a0;
    out[j + 1] = a1;
    out[j + 2] = a2;
    out[j + 3] = a3;
    j += 4;
  }
  for (; j < n; j++) {
    float a = 0.0f;
    const float *xp = x;
    const float *rp = r + j;
    for (int32_t p = 0; p < k; p++) {
      a += *xp * *rp;
      xp += xs;
      rp += ldr;
    }
    out[j] = a;
  }
}

/* out[j] = sum_p x[p*xs] * b[p*sb_p + j*sb_j] for j < n, four outputs at a time
 * (the columns of b are not contiguous, e.g. b is a transposed rhs). */
static void rowdots(float *out, const float *x, int32_t xs, const float *b, int32_t sb_p,
                    int32_t sb_j, int32_t k, int32_t n)
{
  int32_t j = 0;
  for (; j + 4 <= n; j += 4) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    const float *xp = x;
    const float *b0 = b + j * sb_j;
    for (int32_t p = 0; p < k; p++) {
      float v = *xp;
      a0 += v * b0[0];
      a1 += v * b0[sb_j];
      a2 += v * b0[2 * sb_j];
      a3 += v * b0[3 * sb_j];
      xp += xs;
      b0 += sb_p;
    }
    out[j + 0] = a0;
    out[j + 1] = a1;
    out[j + 2] = a2;
    out[j + 3] = a3;
  }
  for (; j < n; j++) {
    float a = 0.0f;
    const float *xp = x;
    const float *bp = b + j * sb_j;
    for (int32_t p = 0; p < k; p++) {
      a += *xp * *bp;
      xp += xs;
      bp += sb_p;
    }
    out[j] = a;
  }
}

void jitk_gemm_strided_f32(float *out, int32_t ldo, const float *a, int32_t sa_i, int32_t sa_p,
                           const float *b, int32_t sb_p, int32_t sb_j, int32_t m, int32_t k,
                           int32_t n)
{
  for (int32_t i = 0; i < m; i++) {
    if (sb_j == 1)
      vecmat(out + i * ldo, a + i * sa_i, sa_p, b, sb_p, k, n);
    else
      rowdots(out + i * ldo, a + i * sa_i, sa_p, b, sb_p, sb_j, k, n);
  }
}

static void fill_zero(float *out, int32_t count)
{
  for (int32_t i = 0; i < count; i++)
    out[i] = 0.0f;
}

/* out [rows] = w [rows][cols] . x (sizes within 16 bits). */
static void mat_vec(float *out, const float *w, int32_t rows, int32_t cols, const float *x)
{
  arm_matrix_instance_f32 mw = {(uint16_t)rows, (uint16_t)cols, (float32_t *)w};
  arm_mat_vec_mult_f32(&mw, x, out);
}

void jitk_gemm_f32(float *out, const float *a, const float *b, int32_t m, int32_t k, int32_t n)
{
  if (m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    fill_zero(out, m * n);
    return;
  }
  if (m == 1) {
    vecmat(out, a, 1, b, n, k, n);
    return;
  }
  if (k > U16_MAX || n > U16_MAX) {
    jitk_gemm_strided_f32(out, n, a, k, 1, b, n, 1, m, k, n);
    return;
  }
  if (n == 1) {
    for (int32_t i = 0; i < m; i += U16_MAX) {
      int32_t rows = m - i < U16_MAX ? m - i : U16_MAX;
      mat_vec(out + i, a + i * k, rows, k, b);
    }
    return;
  }
  for (int32_t i = 0; i < m; i += U16_MAX) {
    int32_t rows = m - i < U16_MAX ? m - i : U16_MAX;
    arm_matrix_instance_f32 ma = {(uint16_t)rows, (uint16_t)k, (float32_t *)(a + i * k)};
    arm_matrix_instance_f32 mb = {(uint16_t)k, (uint16_t)n, (float32_t *)b};
    arm_matrix_instance_f32 mo = {(uint16_t)rows, (uint16_t)n, out + i * n};
    arm_mat_mult_f32(&ma, &mb, &mo);
  }
}

/* out [m][n] = a [m][k] * transpose(bt [n][k]). */
static void gemm_rhs_t(float *out, const float *a, const float *bt, int32_t m, int32_t k,
                       int32_t n)
{
  if (k <= U16_MAX && n <= U16_MAX) {
    for (int32_t i = 0; i < m; i++)
      mat_vec(out + i * n, bt, n, k, a + i * k);
    return;
  }
  for (int32_t i = 0; i < m; i++)
    for (int32_t j = 0; j < n; j++)
      arm_dot_prod_f32(a + i * k, bt + j * k, (uint32_t)k, out + i * n + j);
}

void libjit_matmul_f32(float *out, const float *lhs, const float *rhs, int32_t batch, int32_t m,
                       int32_t k, int32_t n, int32_t lhs_transposed, int32_t rhs_transposed)
{
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  if (k <= 0) {
    fill_zero(out, batch * m * n);
    return;
  }
  for (int32_t bi = 0; bi < batch; bi++) {
    float *o = out + bi * m * n;
    const float *l = lhs + bi * m * k;
    const float *r = rhs + bi * k * n;
    if (!lhs_transposed && !rhs_transposed)
      jitk_gemm_f32(o, l, r, m, k, n);
    else if (!lhs_transposed)
      gemm_rhs_t(o, l, r, m, k, n);
    else if (!rhs_transposed) /* column i of l [k][m] times r [k][n] */
      jitk_gemm_strided_f32(o, n, l, 1, m, r, n, 1, m, k, n);
    else /* column i of l [k][m] times the rows of r [n][k] */
      jitk_gemm_strided_f32(o, n, l, 1, m, r, 1, k, m, k, n);
  }
}
