/* libjit integer kernels: what capture calls for XLA's integer dots (int8 and int32 operands).
 *
 * ABI as in libjit_f32.h: outputs first, every integer argument an int32_t, buffers never
 * overlap. int8 buffers need no alignment.
 */
#ifndef LIBJIT_S8_H
#define LIBJIT_S8_H

#include <stdint.h>

/* Batched s8 x s8 -> s32 matrix product, out row-major [batch][m][n]:
 *   out[b][i][j] = sum_p L[b][i][p] * R[b][p][j]      (exact, wrapping modulo 2^32)
 * lhs is stored [batch][m][k], or [batch][k][m] when lhs_transposed != 0;
 * rhs is stored [batch][k][n], or [batch][n][k] when rhs_transposed != 0.
 * lhs [m][k] with rhs [n][k] (the TFLite fully connected layout) runs on CMSIS-NN's
 * arm_nn_mat_mult_nt_t_s8_s32; the other layouts on plain loops. */
void libjit_matmul_s8_s32(int32_t *out, const int8_t *lhs, const int8_t *rhs, int32_t batch, int32_t m,
                          int32_t k, int32_t n, int32_t lhs_transposed, int32_t rhs_transposed);

/* Batched s32 x s32 -> s32 matrix product, same layouts and result as above, wrapping modulo
 * 2^32 (so it serves u32 x u32 -> u32 as well: the bits are the same). Plain loops. */
void libjit_matmul_s32(int32_t *out, const int32_t *lhs, const int32_t *rhs, int32_t batch, int32_t m,
                       int32_t k, int32_t n, int32_t lhs_transposed, int32_t rhs_transposed);

#endif /* LIBJIT_S8_H */
