/* libjit_matmul_s8_s32 (see libjit_s8.h).
 *
 * Per batch element:
 *   lhs [m][k], rhs [n][k]   out = 0, then arm_nn_mat_mult_nt_t_s8_s32 (SMLAD on Cortex-M4)
 *   rhs [k][n]               out row i = sum_p L[i][p] * rhs row p (row-by-row axpy, so rhs
 *                            is read in order)
 *   lhs [k][m], rhs [n][k]   one dot product per output
 * All sums are formed in uint32_t: wrapping, as XLA's s32 arithmetic.
 */
#include "libjit_s8.h"

#include "libjit_cmsis_nn.h"

void libjit_matmul_s8_s32(int32_t *out, const int8_t *lhs, const int8_t *rhs, int32_t batch, int32_t m,
                          int32_t k, int32_t n, int32_t lhs_transposed, int32_t rhs_transposed)
{
  /* L[i][p] = lhs[i*li + p*lp], R[p][j] = rhs[p*rp + j*rj] */
  const int32_t li = lhs_transposed ? 1 : k, lp = lhs_transposed ? m : 1;
  const int32_t rp = rhs_transposed ? 1 : n, rj = rhs_transposed ? k : 1;
  for (int32_t b = 0; b < batch; b++) {
    const int8_t *l = lhs + b * m * k;
    const int8_t *r = rhs + b * k * n;
    int32_t *o = out + b * m * n;
    if (!lhs_transposed && rhs_transposed) {
      for (int32_t x = 0; x < m * n; x++) {
        o[x] = 0;
      }
      arm_nn_mat_mult_nt_t_s8_s32(l, r, o, m, k, n, 0, 1);
    } else if (!rhs_transposed) {
      for (int32_t i = 0; i < m; i++) {
        uint32_t *row = (uint32_t *)(o + i * n);
        for (int32_t j = 0; j < n; j++) {
          row[j] = 0;
        }
        for (int32_t p = 0; p < k; p++) {
          const int32_t a = l[i * li + p * lp];
          const int8_t *rrow = r + p * rp;
          for (int32_t j = 0; j < n; j++) {
            row[j] += (uint32_t)(a * rrow[j]);
          }
        }
      }
    } else {
      for (int32_t i = 0; i < m; i++) {
        for (int32_t j = 0; j < n; j++) {
          uint32_t acc = 0;
          for (int32_t p = 0; p < k; p++) {
            acc += (uint32_t)(l[i * li + p * lp] * r[j * rj + p]);
          }
          o[i * n + j] = (int32_t)acc;
        }
      }
    }
  }
}
