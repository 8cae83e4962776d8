/*
 * arm_depthwise_conv_s16 (cmsis_nn_shim): TFLite 16x8 depthwise convolution (int16
 * activations, int8 weights), NHWC input, filter [1, HK, WK, C_OUT], channel multiplier,
 * stride, padding, dilation, per-channel requantization, optional int64 bias (see
 * shim_nnfunctions.h).
 *
 * Each output is the exact int64 sum over the taps inside the input (the padding value is the
 * zero point, 0, so the others add nothing), requantized by arm_nn_requantize_s64. The taps
 * inside are found once per output pixel (ky in [ky0, ky1), kx in [kx0, kx1) with dilation),
 * then every output channel sums them: each product fits an int32, the sum goes on in int64
 * (one SMLAL a tap on Cortex-M4). With the DSP extension and ch_mult == 1 four channels go
 * together: two input words (x0, x1) (x2, x3) and one filter word, SXTB16-widened into
 * (w0, w2) (w1, w3), meet in SMLABB / SMLATB / SMLABT / SMLATT, one int32 sum per channel
 * (exact for windows of at most 508 taps: |int16 * int8| <= 2^22, 508 * 2^22 < 2^31), added to
 * the int64 bias at the end.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* first k in [0, n) with 0 <= base + k * step, and one past the last with base + k * step < size */
static inline void valid_taps(int32_t base, int32_t step, int32_t n, int32_t size, int32_t *k0, int32_t *k1)
{
    *k0 = base < 0 ? (-base + step - 1) / step : 0;
    const int32_t room = size - base; /* taps k with k * step < room */
    *k1 = room <= 0 ? 0 : MIN(n, (room + step - 1) / step);
}

static inline __attribute__((always_inline)) int16_t dw_out(int64_t acc, int32_t c, const int64_t *bias, const cmsis_nn_per_channel_quant_params *qp,
                             int32_t act_min, int32_t act_max)
{
    if (bias) {
        acc += bias[c];
    }
    int32_t v = arm_nn_requantize_s64(acc, REDUCE_MULTIPLIER(qp->multiplier[c]), qp->shift[c]);
    v = MAX(v, act_min);
    v = MIN(v, act_max);
    return (int16_t)v;
}

#if defined(ARM_MATH_DSP)
/* taps the DSP path's int32 sums may take */
#define S16_DW_TAPS 508

/* channels c..c+3 (ch_mult 1) over rows x cols taps; src / f point at channel c of the first
   tap, the steps move to the next tap across (dx, fx) and down (dy, fy) */
static inline __attribute__((always_inline)) void dw4(int16_t *o, int32_t c, const int16_t *src, const int8_t *f,
                                                     int32_t rows, int32_t cols, int32_t dx, int32_t dy, int32_t fx,
                                                     int32_t fy, const int64_t *bias,
                                                     const cmsis_nn_per_channel_quant_params *qp, int32_t act_min,
                                                     int32_t act_max)
{
    uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int32_t ky = 0; ky < rows; ky++) {
        const int16_t *s = src + ky * dy;
        const int8_t *w = f + ky * fy;
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
        for (int32_t kx = 0; kx < cols; kx++) {
            const uint32_t x01 = (uint32_t)arm_nn_read_q15x2(s), x23 = (uint32_t)arm_nn_read_q15x2(s + 2);
            const uint32_t wv = (uint32_t)arm_nn_read_s8x4(w);
            const uint32_t w02 = __SXTB16(wv), w13 = __SXTB16_RORn(wv, 8);
            a0 = __SMLABB(x01, w02, a0); /* x0 w0 */
            a1 = __SMLATB(x01, w13, a1); /* x1 w1 */
            a2 = __SMLABT(x23, w02, a2); /* x2 w2 */
            a3 = __SMLATT(x23, w13, a3); /* x3 w3 */
            s += dx;
            w += fx;
        }
    }
    o[c] = dw_out((int32_t)a0, c, bias, qp, act_min, act_max);
    o[c + 1] = dw_out((int32_t)a1, c + 1, bias, qp, act_min, act_max);
    o[c + 2] = dw_out((int32_t)a2, c + 2, bias, qp, act_min, act_max);
    o[c + 3] = dw_out((int32_t)a3, c + 3, bias, qp, act_min, act_max);
}
#endif

arm_cmsis_nn_status arm_depthwise_conv_s16(const cmsis_nn_context *ctx,
                                           const cmsis_nn_dw_conv_params *dw_conv_params,
                                           const cmsis_nn_per_channel_quant_params *quant_params,
                                           const cmsis_nn_dims *input_dims,
                                           const int16_t *input_data,
                                           const cmsis_nn_dims *filter_dims,
                                           const int8_t *filter_data,
                                           const cmsis_nn_dims *bias_dims,
                                           const int64_t *bias_data,
                                           const cmsis_nn_dims *output_dims,
                                           int16_t *output_data)
{
    (void)ctx;
    (void)bias_dims;
    const cmsis_nn_dw_conv_params *p = dw_conv_params;
    const int32_t in_h = input_dims->h, in_w = input_dims->w, in_c = input_dims->c;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t out_h = output_dims->h, out_w = output_dims->w, out_c = output_dims->c;
    const int32_t ch_mult = p->ch_mult;
    const int32_t dil_h = p->dilation.h, dil_w = p->dilation.w;
    const int32_t act_min = p->activation.min, act_max = p->activation.max;
    if (ch_mult <= 0 || in_c * ch_mult != out_c || dil_h <= 0 || dil_w <= 0) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t row_stride = in_w * in_c, tap_stride_y = dil_h * row_stride, tap_stride_x = dil_w * in_c;
    const int32_t frow_stride = kw * out_c;
#if defined(ARM_MATH_DSP)
    const int32_t c4 = (ch_mult == 1 && kh * kw <= S16_DW_TAPS) ? (out_c & ~3) : 0;
#endif
    for (int32_t b = 0; b < input_dims->n; b++) {
        const int16_t *in = input_data + b * in_h * row_stride;
        int16_t *out = output_data + b * out_h * out_w * out_c;
        for (int32_t oy = 0; oy < out_h; oy++) {
            const int32_t y0 = oy * p->stride.h - p->padding.h;
            int32_t ky0, ky1;
            valid_taps(y0, dil_h, kh, in_h, &ky0, &ky1);
            for (int32_t ox = 0; ox < out_w; ox++) {
                const int32_t x0 = ox * p->stride.w - p->padding.w;
                int32_t kx0, kx1;
                valid_taps(x0, dil_w, kw, in_w, &kx0, &kx1);
                int16_t *o = out + (oy * out_w + ox) * out_c;
                /* tap (ky0, kx0) of channel 0, in the input (if any tap is inside) and in the filter */
                const int32_t any = ky0 < ky1 && kx0 < kx1;
                const int16_t *first = any ? in + (y0 + ky0 * dil_h) * row_stride + (x0 + kx0 * dil_w) * in_c : in;
                const int8_t *ffirst = filter_data + ky0 * frow_stride + kx0 * out_c;
                int32_t c = 0;
#if defined(ARM_MATH_DSP)
                if (c4 && any) {
                    for (; c < c4; c += 4) {
                        dw4(o, c, first + c, ffirst + c, ky1 - ky0, kx1 - kx0, tap_stride_x, tap_stride_y, out_c,
                            frow_stride, bias_data, quant_params, act_min, act_max);
                    }
                }
#endif
                for (; c < out_c; c++) {
                    const int16_t *src_row = first + c / ch_mult;
                    const int8_t *f_row = ffirst + c;
                    int64_t acc = bias_data ? bias_data[c] : 0;
                    for (int32_t ky = ky0; ky < ky1; ky++) {
                        const int16_t *src = src_row;
                        const int8_t *f = f_row;
                        for (int32_t kx = kx0; kx < kx1; kx++) {
                            acc += (int64_t)*src * *f;
                            src += tap_stride_x;
                            f += out_c;
                        }
                        src_row += tap_stride_y;
                        f_row += frow_stride;
                    }
                    o[c] = dw_out(acc, c, NULL, quant_params, act_min, act_max);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
