/*
 * arm_depthwise_conv_s8 (cmsis_nn_shim): TFLite int8 depthwise convolution, NHWC input,
 * filter [1, HK, WK, C_OUT], channel multiplier, per-channel requantization, optional bias
 * (see shim_nnfunctions.h).
 *
 * Taps outside the input are skipped (the padding value is the input zero point, so they add
 * nothing). With the DSP extension and ch_mult == 1, four channels go together: SXTAB16 widens
 * input bytes 0/2 and 1/3 to int16 with the input offset added, SXTB16 the filter bytes alike,
 * and SMLABB/SMLATT accumulate each channel on its own.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

static inline int8_t dw_requant(int32_t acc, int32_t oc, const int32_t *bias,
                                const cmsis_nn_per_channel_quant_params *qp, const cmsis_nn_dw_conv_params *p)
{
    if (bias) {
        acc = (int32_t)((uint32_t)acc + (uint32_t)bias[oc]);
    }
    int32_t v = arm_nn_requantize(acc, qp->multiplier[oc], qp->shift[oc]) + p->output_offset;
    v = MAX(v, p->activation.min);
    v = MIN(v, p->activation.max);
    return (int8_t)v;
}

#if defined(ARM_MATH_DSP)
/* channels c..c+3 of one output pixel over taps [ky0, ky1) x [kx0, kx1); src and f point at
   channel c of tap (0, 0) */
static inline __attribute__((always_inline)) void dw4(int8_t *o, int32_t c, const int8_t *src, const int8_t *f,
                                                     int32_t ky0, int32_t ky1, int32_t kx0, int32_t kx1,
                                                     int32_t row_stride, int32_t col_stride, int32_t frow_stride,
                                                     int32_t fcol_stride, uint32_t off2, const int32_t *bias,
                                                     const cmsis_nn_per_channel_quant_params *qp,
                                                     const cmsis_nn_dw_conv_params *p)
{
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int32_t ky = ky0; ky < ky1; ky++) {
        for (int32_t kx = kx0; kx < kx1; kx++) {
            const uint32_t xv = (uint32_t)arm_nn_read_s8x4(src + ky * row_stride + kx * col_stride);
            const uint32_t wv = (uint32_t)arm_nn_read_s8x4(f + ky * frow_stride + kx * fcol_stride);
            const uint32_t x02 = __SXTAB16(off2, xv), x13 = __SXTAB16_RORn(off2, xv, 8);
            const uint32_t w02 = __SXTB16(wv), w13 = __SXTB16_RORn(wv, 8);
            a0 = (int32_t)__SMLABB(x02, w02, (uint32_t)a0);
            a2 = (int32_t)__SMLATT(x02, w02, (uint32_t)a2);
            a1 = (int32_t)__SMLABB(x13, w13, (uint32_t)a1);
            a3 = (int32_t)__SMLATT(x13, w13, (uint32_t)a3);
        }
    }
    o[c] = dw_requant(a0, c, bias, qp, p);
    o[c + 1] = dw_requant(a1, c + 1, bias, qp, p);
    o[c + 2] = dw_requant(a2, c + 2, bias, qp, p);
    o[c + 3] = dw_requant(a3, c + 3, bias, qp, p);
}
#endif

#ifndef SHIM_DEPTHWISE_S8
#define SHIM_DEPTHWISE_S8 arm_depthwise_conv_s8
#define SHIM_DEPTHWISE_S8_STORAGE
#endif
SHIM_DEPTHWISE_S8_STORAGE arm_cmsis_nn_status SHIM_DEPTHWISE_S8(const cmsis_nn_context *ctx,
                                          const cmsis_nn_dw_conv_params *dw_conv_params,
                                          const cmsis_nn_per_channel_quant_params *quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input_data,
                                          const cmsis_nn_dims *filter_dims,
                                          const int8_t *filter_data,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias_data,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output_data)
{
    (void)ctx;
    (void)bias_dims;
    const cmsis_nn_dw_conv_params *p = dw_conv_params;
    const int32_t in_h = input_dims->h, in_w = input_dims->w, in_c = input_dims->c;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t out_h = output_dims->h, out_w = output_dims->w, out_c = output_dims->c;
    const int32_t ch_mult = p->ch_mult;
    const int32_t dil_h = p->dilation.h, dil_w = p->dilation.w;
    const int32_t in_off = p->input_offset;
    if (ch_mult <= 0 || in_c * ch_mult != out_c) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
#if defined(ARM_MATH_DSP)
    const int32_t c4 = (ch_mult == 1 && dil_h == 1 && dil_w == 1) ? (out_c & ~3) : 0;
    const uint32_t off2 = shim_offset_x2(in_off);
#endif
    for (int32_t b = 0; b < input_dims->n; b++) {
        const int8_t *in = input_data + b * in_h * in_w * in_c;
        int8_t *out = output_data + b * out_h * out_w * out_c;
        for (int32_t oy = 0; oy < out_h; oy++) {
            const int32_t y0 = oy * p->stride.h - p->padding.h;
            for (int32_t ox = 0; ox < out_w; ox++) {
                const int32_t x0 = ox * p->stride.w - p->padding.w;
                int8_t *o = out + (oy * out_w + ox) * out_c;
                int32_t c = 0;
#if defined(ARM_MATH_DSP)
                /* valid taps (dilation 1 here): ky in [ky0, ky1), kx in [kx0, kx1); a window
                   fully inside the input takes the path with constant trip counts, which the
                   compiler unrolls once the filter size is known */
                const int32_t ky0 = MAX(0, -y0), ky1 = MIN(kh, in_h - y0);
                const int32_t kx0 = MAX(0, -x0), kx1 = MIN(kw, in_w - x0);
                const int8_t *window = in + (y0 * in_w + x0) * in_c;
                if (ky0 == 0 && kx0 == 0 && ky1 == kh && kx1 == kw) {
                    for (; c < c4; c += 4) {
                        dw4(o, c, window + c, filter_data + c, 0, kh, 0, kw, in_w * in_c, in_c, kw * out_c,
                            out_c, off2, bias_data, quant_params, p);
                    }
                } else {
                    for (; c < c4; c += 4) {
                        dw4(o, c, window + c, filter_data + c, ky0, ky1, kx0, kx1, in_w * in_c, in_c,
                            kw * out_c, out_c, off2, bias_data, quant_params, p);
                    }
                }
#endif
                for (; c < out_c; c++) {
                    const int32_t ic = c / ch_mult;
                    uint32_t acc = 0;
                    for (int32_t ky = 0; ky < kh; ky++) {
                        const int32_t iy = y0 + ky * dil_h;
                        if (iy < 0 || iy >= in_h) {
                            continue;
                        }
                        for (int32_t kx = 0; kx < kw; kx++) {
                            const int32_t ix = x0 + kx * dil_w;
                            if (ix < 0 || ix >= in_w) {
                                continue;
                            }
                            const int32_t xv = in[(iy * in_w + ix) * in_c + ic] + in_off;
                            acc += (uint32_t)(xv * filter_data[(ky * kw + kx) * out_c + c]);
                        }
                    }
                    o[c] = dw_requant((int32_t)acc, c, bias_data, quant_params, p);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
