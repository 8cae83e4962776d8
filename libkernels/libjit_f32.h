/* libjit f32 kernels for the operations XLA leaves to its runtime: dots and convolutions
 * (transposed ones included).
 *
 * Calls to these are emitted by capture. ABI: outputs first, every pointer at least 4-byte
 * aligned, every integer argument an int32_t. Buffers never overlap.
 */
#ifndef LIBJIT_F32_H
#define LIBJIT_F32_H

#include <stdint.h>

/* Batched matrix product, out row-major [batch][m][n]:
 *   out[b][i][j] = sum_p L[b][i][p] * R[b][p][j]
 * lhs is stored [batch][m][k], or [batch][k][m] when lhs_transposed != 0;
 * rhs is stored [batch][k][n], or [batch][n][k] when rhs_transposed != 0. */
void libjit_matmul_f32(float *out, const float *lhs, const float *rhs, int32_t batch, int32_t m,
                       int32_t k, int32_t n, int32_t lhs_transposed, int32_t rhs_transposed);

/* 2-D convolution, in NHWC [batch][in_h][in_w][in_c], filter HWIO [k_h][k_w][in_c/groups][out_c],
 * out NHWC [batch][out_h][out_w][out_c]:
 *   out[b][y][x][o] = sum_{ky,kx,ci} in[b][y*stride_h - pad_top + ky*dil_h]
 *                                        [x*stride_w - pad_left + kx*dil_w][g*cin_g + ci]
 *                                    * filter[ky][kx][ci][o]
 * with cin_g = in_c/groups, g = o / (out_c/groups); taps outside the input read as zero
 * (bottom/right padding is implied by out_h/out_w). groups == in_c is depthwise
 * (out_c == in_c * multiplier).
 *
 * scratch must hold LIBJIT_CONV2D_SCRATCH_FLOATS(out_w, k_h, k_w, in_c/groups) floats
 * (the im2col buffer of one output row of one group). It is not touched, and may be NULL, when
 * in_c/groups == 1 (depthwise, direct loop) or on the 1x1 fast path
 * (k_h == k_w == 1, stride 1, no padding, groups == 1). */
void libjit_conv2d_f32(float *out, const float *in, const float *filter, float *scratch,
                       int32_t batch, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h,
                       int32_t out_w, int32_t out_c, int32_t k_h, int32_t k_w, int32_t stride_h,
                       int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dil_h,
                       int32_t dil_w, int32_t groups);

/* 2-D convolution of a dilated input: XLA's form of a transposed convolution. As
 * libjit_conv2d_f32, but the input is read as if b_h-1 / b_w-1 zeros stood between its rows /
 * columns (base dilation bdil_h, bdil_w), and the filter's rows / columns are taken in reverse
 * when bit 0 / bit 1 of reverse is set (window reversal):
 *   out[b][y][x][o] = sum over ky, kx, ci with p = y*stride_h - pad_top + ky*dil_h and
 *                     q = x*stride_w - pad_left + kx*dil_w multiples of bdil_h, bdil_w inside
 *                     the dilated input of in[b][p/bdil_h][q/bdil_w][g*cin_g + ci]
 *                                         * filter[ky'][kx'][ci][o]
 * with ky' = k_h-1-ky under row reversal (else ky), kx' likewise. Padding may be negative
 * (taps before the input are skipped). Only taps on real input pixels are multiplied; no
 * scratch. */
void libjit_conv_transpose2d_f32(float *out, const float *in, const float *filter, int32_t batch,
                                 int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h,
                                 int32_t out_w, int32_t out_c, int32_t k_h, int32_t k_w,
                                 int32_t stride_h, int32_t stride_w, int32_t pad_top,
                                 int32_t pad_left, int32_t dil_h, int32_t dil_w, int32_t groups,
                                 int32_t bdil_h, int32_t bdil_w, int32_t reverse);

/* Depthwise convolution with channel multiplier 2 or 4 (out_c == 2 * in_c or 4 * in_c): as
 * libjit_conv2d_f32 with groups == in_c, no scratch. */
void libjit_dwconv_mult_f32(float *out, const float *in, const float *filter, int32_t batch,
                            int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
                            int32_t out_c, int32_t k_h, int32_t k_w, int32_t stride_h,
                            int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dil_h,
                            int32_t dil_w);

/* Scratch floats for libjit_conv2d_f32: out_w * k_h * k_w * cin_g, cin_g = in_c / groups. */
#define LIBJIT_CONV2D_SCRATCH_FLOATS(out_w, k_h, k_w, cin_g) \
  ((out_w) * (k_h) * (k_w) * (cin_g))

/* Shared between the kernels (not entry points; internalized when the library is linked).
 * jitk_gemm_f32: contiguous row-major out [m][n] = a [m][k] * b [k][n].
 * jitk_gemm_strided_f32: out[i*ldo + j] = sum_p a[i*sa_i + p*sa_p] * b[p*sb_p + j*sb_j]. */
void jitk_gemm_f32(float *out, const float *a, const float *b, int32_t m, int32_t k, int32_t n);
void jitk_gemm_strided_f32(float *out, int32_t ldo, const float *a, int32_t sa_i, int32_t sa_p,
                           const float *b, int32_t sb_p, int32_t sb_j, int32_t m, int32_t k,
                           int32_t n);

#endif /* LIBJIT_F32_H */
