/* libjit_matmul_f32: batched f32 matrix product (see libjit_f32.h).
 *
 * Paths, per batch element (a [1][k] or [k][1] operand is taken as not transposed):
 *   m == 1, rhs [k][n]          vecmat below: blocks of 16 (8, 4, 1) outputs held in registers
 *                               while one pass walks the rows of rhs (x @ W, the dense layer)
 *   rhs [k][n], n == 1          arm_mat_vec_mult_f32(lhs as [m][k], rhs as a vector)
 *   lhs [m][k], rhs [k][n]      gemm_blocked below: 4x4 register blocks (measured on QEMU:
 *                               3.3 est. cycles/MAC on the KWS pointwise convs against 6.6 for
 *                               arm_mat_mult_f32, and faster on every smaller shape tried)
 *   lhs [m][k], rhs [n][k]      arm_mat_vec_mult_f32(rhs as [n][k], lhs row) per lhs row
 *                               (m == 1 is exactly W.x); arm_dot_prod_f32 per output when a
 *                               size does not fit CMSIS-DSP's 16-bit matrix dimensions
 *   lhs [k][m]                  strided loops (vecmat with a strided x, or row dot products)
 * CMSIS-DSP matrices have 16-bit dimensions: larger sizes take gemm_blocked or the strided loops.
 */
#include "libjit_f32.h"

#include "arm_math.h"

#define U16_MAX 65535

/* No machine scheduler for this file's functions (pre- or post-register-allocation): their code
 * keeps the order written here. LLVM's Cortex-M4 scheduler puts each load next to its use,
 * between the multiply-adds, so loads never follow loads and lose the TRM's pipelining (a load
 * right after a load costs 1 cycle instead of 2); vecmat and gemm_blocked load first (codegen.py's
 * -pre-RA-sched=source keeps the IR's order through instruction selection). Per file,
 * not per build (codegen.py): CMSIS-NN's int8 kernels are faster scheduled (kws_int8 all-args
 * +23% est. cycles without). Functions of other files are not inlined into these (their target
 * features differ) and these not into them. */
#ifdef __clang__ /* the host build of the kernel tests uses gcc */
#pragma clang attribute push(__attribute__((target("no-use-misched,disable-postra-scheduler"))), \
                             apply_to = function)
#endif

/* out[j] = sum_p x[p*xs] * r[p*ldr + j] for j < n: a row vector times a row-major matrix.
 * Output columns are done 16 (then 8, 4, 1) at a time with the sums in registers, so every
 * element of r is loaded once and the loads of a block are contiguous (one pointer bumped by a
 * row per step, the 16 loads at offsets 0..60 from it). Each step loads 8 weights before their 8
 * multiply-adds: the backend keeps this order (no machine scheduler: the pragma above), so
 * the loads pipeline on the Cortex-M4 (a load right after a load costs 1 cycle instead of 2).
 * 8, not 16: 16 sums + 16 weights + x would need 33 of the 32 single-precision registers. */
static void vecmat(float *out, const float *x, int32_t xs, const float *r, int32_t ldr,
                   int32_t k, int32_t n)
{
  int32_t j = 0;
  for (; j + 16 <= n; j += 16) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f, a5 = 0.0f, a6 = 0.0f, a7 = 0.0f;
    float a8 = 0.0f, a9 = 0.0f, a10 = 0.0f, a11 = 0.0f, a12 = 0.0f, a13 = 0.0f, a14 = 0.0f,
          a15 = 0.0f;
    const float *xp = x;
    const float *rp = r + j;
    for (int32_t p = 0; p < k; p++) {
      float v = *xp;
      float w0 = rp[0], w1 = rp[1], w2 = rp[2], w3 = rp[3], w4 = rp[4], w5 = rp[5], w6 = rp[6],
            w7 = rp[7];
      a0 += v * w0;
      a1 += v * w1;
      a2 += v * w2;
      a3 += v * w3;
      a4 += v * w4;
      a5 += v * w5;
      a6 += v * w6;
      a7 += v * w7;
      float w8 = rp[8], w9 = rp[9], w10 = rp[10], w11 = rp[11], w12 = rp[12], w13 = rp[13],
            w14 = rp[14], w15 = rp[15];
      a8 += v * w8;
      a9 += v * w9;
      a10 += v * w10;
      a11 += v * w11;
      a12 += v * w12;
      a13 += v * w13;
      a14 += v * w14;
      a15 += v * w15;
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
    out[j + 8] = a8;
    out[j + 9] = a9;
    out[j + 10] = a10;
    out[j + 11] = a11;
    out[j + 12] = a12;
    out[j + 13] = a13;
    out[j + 14] = a14;
    out[j + 15] = a15;
  }
  if (j + 8 <= n) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f, a4 = 0.0f, a5 = 0.0f, a6 = 0.0f, a7 = 0.0f;
    const float *xp = x;
    const float *rp = r + j;
    for (int32_t p = 0; p < k; p++) {
      float v = *xp;
      float w0 = rp[0], w1 = rp[1], w2 = rp[2], w3 = rp[3], w4 = rp[4], w5 = rp[5], w6 = rp[6],
            w7 = rp[7];
      a0 += v * w0;
      a1 += v * w1;
      a2 += v * w2;
      a3 += v * w3;
      a4 += v * w4;
      a5 += v * w5;
      a6 += v * w6;
      a7 += v * w7;
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
    j += 8;
  }
  if (j + 4 <= n) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    const float *xp = x;
    const float *rp = r + j;
    for (int32_t p = 0; p < k; p++) {
      float v = *xp;
      float w0 = rp[0], w1 = rp[1], w2 = rp[2], w3 = rp[3];
      a0 += v * w0;
      a1 += v * w1;
      a2 += v * w2;
      a3 += v * w3;
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

/* Register-blocked out [m][n] = a [m][k] * b [k][n], all contiguous row-major.
 * Blocks of 4 rows x 4 columns keep 16 sums in registers; per step p they load column p of
 * the 4 rows of a and 4 contiguous values of row p of b (8 loads for 16 multiply-adds, against
 * 2 per multiply-add for a dot product). Columns n % 4 are done 4 rows x 1, rows m % 4 in
 * 2-row blocks (2x4, 2x1) and a last row with vecmat. */
static void gemm_blocked(float *out, const float *a, const float *b, int32_t m, int32_t k,
                         int32_t n)
{
  int32_t i = 0;
  for (; i + 4 <= m; i += 4) {
    const float *a0 = a + i * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;
    float *o0 = out + i * n, *o1 = o0 + n, *o2 = o1 + n, *o3 = o2 + n;
    int32_t j = 0;
    for (; j + 4 <= n; j += 4) {
      float c00 = 0.0f, c01 = 0.0f, c02 = 0.0f, c03 = 0.0f;
      float c10 = 0.0f, c11 = 0.0f, c12 = 0.0f, c13 = 0.0f;
      float c20 = 0.0f, c21 = 0.0f, c22 = 0.0f, c23 = 0.0f;
      float c30 = 0.0f, c31 = 0.0f, c32 = 0.0f, c33 = 0.0f;
      const float *ap = a0, *bp = b + j;
      for (int32_t p = 0; p < k; p++) {
        const float x0 = ap[0], x1 = ap[k], x2 = ap[2 * k], x3 = ap[3 * k];
        const float y0 = bp[0], y1 = bp[1], y2 = bp[2], y3 = bp[3];
        ap++;
        c00 += x0 * y0;
        c01 += x0 * y1;
        c02 += x0 * y2;
        c03 += x0 * y3;
        c10 += x1 * y0;
        c11 += x1 * y1;
        c12 += x1 * y2;
        c13 += x1 * y3;
        c20 += x2 * y0;
        c21 += x2 * y1;
        c22 += x2 * y2;
        c23 += x2 * y3;
        c30 += x3 * y0;
        c31 += x3 * y1;
        c32 += x3 * y2;
        c33 += x3 * y3;
        bp += n;
      }
      o0[j + 0] = c00;
      o0[j + 1] = c01;
      o0[j + 2] = c02;
      o0[j + 3] = c03;
      o1[j + 0] = c10;
      o1[j + 1] = c11;
      o1[j + 2] = c12;
      o1[j + 3] = c13;
      o2[j + 0] = c20;
      o2[j + 1] = c21;
      o2[j + 2] = c22;
      o2[j + 3] = c23;
      o3[j + 0] = c30;
      o3[j + 1] = c31;
      o3[j + 2] = c32;
      o3[j + 3] = c33;
    }
    for (; j < n; j++) {
      float c0 = 0.0f, c1 = 0.0f, c2 = 0.0f, c3 = 0.0f;
      const float *bp = b + j;
      for (int32_t p = 0; p < k; p++) {
        const float y = *bp;
        c0 += a0[p] * y;
        c1 += a1[p] * y;
        c2 += a2[p] * y;
        c3 += a3[p] * y;
        bp += n;
      }
      o0[j] = c0;
      o1[j] = c1;
      o2[j] = c2;
      o3[j] = c3;
    }
  }
  if (i + 2 <= m) {
    const float *a0 = a + i * k, *a1 = a0 + k;
    float *o0 = out + i * n, *o1 = o0 + n;
    int32_t j = 0;
    for (; j + 4 <= n; j += 4) {
      float c00 = 0.0f, c01 = 0.0f, c02 = 0.0f, c03 = 0.0f;
      float c10 = 0.0f, c11 = 0.0f, c12 = 0.0f, c13 = 0.0f;
      const float *bp = b + j;
      for (int32_t p = 0; p < k; p++) {
        const float x0 = a0[p], x1 = a1[p];
        const float y0 = bp[0], y1 = bp[1], y2 = bp[2], y3 = bp[3];
        c00 += x0 * y0;
        c01 += x0 * y1;
        c02 += x0 * y2;
        c03 += x0 * y3;
        c10 += x1 * y0;
        c11 += x1 * y1;
        c12 += x1 * y2;
        c13 += x1 * y3;
        bp += n;
      }
      o0[j + 0] = c00;
      o0[j + 1] = c01;
      o0[j + 2] = c02;
      o0[j + 3] = c03;
      o1[j + 0] = c10;
      o1[j + 1] = c11;
      o1[j + 2] = c12;
      o1[j + 3] = c13;
    }
    for (; j < n; j++) {
      float c0 = 0.0f, c1 = 0.0f;
      const float *bp = b + j;
      for (int32_t p = 0; p < k; p++) {
        const float y = *bp;
        c0 += a0[p] * y;
        c1 += a1[p] * y;
        bp += n;
      }
      o0[j] = c0;
      o1[j] = c1;
    }
    i += 2;
  }
  if (i < m)
    vecmat(out + i * n, a + i * k, 1, b, n, k, n);
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
  if (n == 1 && m <= U16_MAX && k <= U16_MAX) {
    mat_vec(out, a, m, k, b);
    return;
  }
  gemm_blocked(out, a, b, m, k, n);
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
  /* a [1][k] operand is stored the same transposed or not (and so is a [k][1] one) */
  if (m == 1)
    lhs_transposed = 0;
  if (n == 1)
    rhs_transposed = 0;
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

#ifdef __clang__
#pragma clang attribute pop
#endif
