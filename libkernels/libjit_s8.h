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

/* int8 depthwise convolution, channel multiplier 1, batch 1, NHWC [in_h][in_w][ch] ->
 * [out_h][out_w][ch], CMSIS-NN's arm_depthwise_conv_s8 results exactly, for weights known at
 * compile time (dwconv_s8.c; specializer/optimize/relayout_depthwise.py writes the arguments):
 *   w      int16 pairs per channel and filter row, doubled when fast;
 *   rq     per channel {bias, multiplier, shift, 0}, or when fast {2 * bias, multiplier, K, rs};
 *          the bias has the input offset folded in;
 *   plane  int16 scratch [plane_h][plane_w] (plane_w even, word aligned), border pad_value.
 * Returns 0. */
int32_t libjit_dwconv_s8(int8_t *out, const int8_t *in, const int16_t *w, const int32_t *rq, int16_t *plane,
                         int32_t in_h, int32_t in_w, int32_t ch, int32_t kh, int32_t kw, int32_t stride_h,
                         int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t out_h, int32_t out_w,
                         int32_t plane_h, int32_t plane_w, int32_t pad_value, int32_t fast, int32_t out_offset,
                         int32_t act_min, int32_t act_max);

/* The same with channel multiplier mult: output channel c * mult + m reads input channel c
 * (out [out_h][out_w][ch * mult]); w and rq per output channel. Returns 0. */
int32_t libjit_dwconv_mult_s8(int8_t *out, const int8_t *in, const int16_t *w, const int32_t *rq, int16_t *plane,
                              int32_t in_h, int32_t in_w, int32_t ch, int32_t kh, int32_t kw, int32_t stride_h,
                              int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t out_h, int32_t out_w,
                              int32_t plane_h, int32_t plane_w, int32_t pad_value, int32_t fast,
                              int32_t out_offset, int32_t act_min, int32_t act_max, int32_t mult);

/* int8 convolution, batch 1, NHWC [in_h][in_w][in_c] -> [out_h][out_w][out_c], filter
 * [out_c][kh][kw][in_c], CMSIS-NN's arm_convolve_s8 results exactly, for weights known at compile
 * time (conv_s8.c; specializer/optimize/relayout_conv.py writes the arguments): w int16 panels of
 * two output channels (int8 when narrow), rq as for libjit_dwconv_s8, cols scratch (relayout_conv.Shape.cols_bytes)
 * (word aligned). Only live_c of the out_c output channels are computed (w and rq hold theirs):
 * the one at place o goes to output channel index[o] (o when index is null); when fill is not
 * null, each output pixel first gets its out_c bytes (the values of the channels no input
 * changes). Returns 0. */
int32_t libjit_conv_s8(int8_t *out, const int8_t *in, const void *w, const int32_t *rq, int8_t *cols,
                       const int16_t *index, const int8_t *fill, int32_t in_h, int32_t in_w, int32_t in_c,
                       int32_t out_c, int32_t live_c, int32_t kh, int32_t kw,
                       int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dil_h,
                       int32_t dil_w, int32_t out_h, int32_t out_w, int32_t pad_value, int32_t fast,
                       int32_t narrow, int32_t out_offset, int32_t act_min, int32_t act_max);

/* int8 elementwise add of n values from two 256-entry tables of each input's requantized value
 * (add_s8.c; specializer/optimize/relayout_add.py writes them and rq: [0, multiplier, shift or
 * the fast form's K, its rs]). */
int32_t libjit_add_s8(int8_t *out, const int8_t *a, const int8_t *b, const int32_t *ta, const int32_t *tb,
                      const int32_t *rq, int32_t fast, int32_t out_offset, int32_t act_min, int32_t act_max,
                      int32_t n);

#endif /* LIBJIT_S8_H */
