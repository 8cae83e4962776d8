/* libjit_matmul_s32 (see libjit_s8.h): s32 x s32 -> s32 dots (jnp.dot of int32 arrays; XLA also
 * widens u8/s8 operands it cannot keep narrow to s32). Sums are formed in uint32_t, so they wrap
 * modulo 2^32 as XLA's s32 (and u32: the same bits) arithmetic does.
 *   rhs [k][n]: out row i accumulates rhs row p scaled by L[i][p] (rhs read in order)
 *   rhs [n][k]: one dot product per output */
#include "libjit_s8.h"

void libjit_matmul_s32(int32_t *out, const int32_t *lhs, const int32_t *rhs, int32_t batch, int32_t m,
                       int32_t k, int32_t n, int32_t lhs_transposed, int32_t rhs_transposed)
{
  /* L[i][p] = lhs[i*li + p*lp] */
  const int32_t li = lhs_transposed ? 1 : k, lp = lhs_transposed ? m : 1;
  for (int32_t b = 0; b < batch; b++) {
    const uint32_t *l = (const uint32_t *)lhs + b * m * k;
    const uint32_t *r = (const uint32_t *)rhs + b * k * n;
    uint32_t *o = (uint32_t *)out + b * m * n;
    for (int32_t i = 0; i < m; i++) {
      uint32_t *row = o + i * n;
      if (!rhs_transposed) {
        for (int32_t j = 0; j < n; j++) {
          row[j] = 0;
        }
        for (int32_t p = 0; p < k; p++) {
          const uint32_t a = l[i * li + p * lp];
          const uint32_t *rrow = r + p * n;
          for (int32_t j = 0; j < n; j++) {
            row[j] += a * rrow[j];
          }
        }
      } else {
        for (int32_t j = 0; j < n; j++) {
          uint32_t acc = 0;
          for (int32_t p = 0; p < k; p++) {
            acc += l[i * li + p * lp] * r[j * k + p];
          }
          row[j] = acc;
        }
      }
    }
  }
}
