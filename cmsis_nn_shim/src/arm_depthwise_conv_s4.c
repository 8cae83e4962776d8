/*
 * arm_depthwise_conv_s4 (cmsis_nn_shim): arm_depthwise_conv_s8's layer with int4 weights packed
 * two a byte (see shim_nnfunctions.h); any channel multiplier. Output channel o reads input
 * channel o / ch_mult and filter tap (ky, kx) weight (ky * KW + kx) * C_OUT + o. The filter
 * rows and columns inside the input are found once per output pixel. With multiplier 1 and C_OUT a
 * multiple of 4, channels go in fours (a tap's four inputs one word, its four weights one
 * halfword); else with C_OUT even in pairs (one byte holds a tap's weights of channels o, o + 1).
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* a tap row's loop kept rolled: unrolled, its many live values spill every accumulator */
#if defined(__clang__)
#define ROW_LOOP _Pragma("clang loop unroll(disable)")
#else
#define ROW_LOOP
#endif

static inline int8_t finish(int32_t acc, int32_t o, const int32_t *bias, const cmsis_nn_per_channel_quant_params *qp,
                            const cmsis_nn_dw_conv_params *dp)
{
    return shim_s4_output(acc, bias, o, qp->multiplier[o], qp->shift[o], dp->output_offset, dp->activation);
}

arm_cmsis_nn_status arm_depthwise_conv_s4(const cmsis_nn_context *ctx,
                                          const cmsis_nn_dw_conv_params *dw_conv_params,
                                          const cmsis_nn_per_channel_quant_params *quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input,
                                          const cmsis_nn_dims *filter_dims,
                                          const int8_t *kernel,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output)
{
    (void)ctx;
    (void)bias_dims;
    const int32_t in_h = input_dims->h, in_w = input_dims->w, in_c = input_dims->c;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t out_h = output_dims->h, out_w = output_dims->w, out_c = output_dims->c;
    const int32_t mult = dw_conv_params->ch_mult;
    if (out_c != in_c * mult || filter_dims->c != out_c) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t off = dw_conv_params->input_offset;
    for (int32_t n = 0; n < input_dims->n; n++) {
        const int8_t *in = input + n * in_h * in_w * in_c;
        for (int32_t oy = 0; oy < out_h; oy++) {
            /* the filter rows and columns whose taps fall inside the input, once per pixel */
            const int32_t y0 = oy * dw_conv_params->stride.h - dw_conv_params->padding.h;
            const int32_t ky0 = MAX(0, -y0), ky1 = MIN(kh, in_h - y0);
            for (int32_t ox = 0; ox < out_w; ox++) {
                const int32_t x0 = ox * dw_conv_params->stride.w - dw_conv_params->padding.w;
                const int32_t kx0 = MAX(0, -x0), kx1 = MIN(kw, in_w - x0);
                int32_t o = 0;
                /* multiplier 1, channels in fours: one word of inputs and one halfword of weights a tap */
                for (; mult == 1 && (out_c & 3) == 0 && o < out_c; o += 4) {
                    int32_t acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
                    for (int32_t ky = ky0; ky < ky1; ky++) {
                        const int32_t row = ((y0 + ky) * in_w + x0) * in_c + o;  /* + kx * in_c >= 0 */
                        const int8_t *wk = kernel + ((ky * kw) * out_c + o) / 2;
                        ROW_LOOP
                        for (int32_t kx = kx0; kx < kx1; kx++) {
                            const int32_t x = arm_nn_read_s8x4(in + row + kx * in_c);
                            int16_t wh;
                            memcpy(&wh, wk + kx * (out_c >> 1), 2);
                            const int32_t w = wh;
                            acc0 += ((int8_t)x + off) * ((int32_t)((uint32_t)w << 28) >> 28);
                            acc1 += ((int8_t)(x >> 8) + off) * ((int32_t)((uint32_t)w << 24) >> 28);
                            acc2 += ((int8_t)(x >> 16) + off) * ((int32_t)((uint32_t)w << 20) >> 28);
                            acc3 += ((x >> 24) + off) * (w >> 12);
                        }
                    }
                    *output++ = finish(acc0, o, bias, quant_params, dw_conv_params);
                    *output++ = finish(acc1, o + 1, bias, quant_params, dw_conv_params);
                    *output++ = finish(acc2, o + 2, bias, quant_params, dw_conv_params);
                    *output++ = finish(acc3, o + 3, bias, quant_params, dw_conv_params);
                }
                for (; (out_c & 1) == 0 && o < out_c; o += 2) {
                    const int8_t *src0 = in + o / mult, *src1 = in + (o + 1) / mult;
                    int32_t acc0 = 0, acc1 = 0;
                    for (int32_t ky = ky0; ky < ky1; ky++) {
                        const int32_t row = ((y0 + ky) * in_w + x0) * in_c;
                        ROW_LOOP
                        for (int32_t kx = kx0; kx < kx1; kx++) {
                            const int32_t w = kernel[((ky * kw + kx) * out_c + o) >> 1];
                            acc0 += (src0[row + kx * in_c] + off) * ((int32_t)((uint32_t)w << 28) >> 28);
                            acc1 += (src1[row + kx * in_c] + off) * (w >> 4);
                        }
                    }
                    *output++ = finish(acc0, o, bias, quant_params, dw_conv_params);
                    *output++ = finish(acc1, o + 1, bias, quant_params, dw_conv_params);
                }
                for (; o < out_c; o++) {
                    const int8_t *src = in + o / mult;
                    int32_t acc = 0;
                    for (int32_t ky = ky0; ky < ky1; ky++) {
                        const int32_t row = ((y0 + ky) * in_w + x0) * in_c;
                        for (int32_t kx = kx0; kx < kx1; kx++) {
                            acc += (src[row + kx * in_c] + off) * shim_s4_weight(kernel, (ky * kw + kx) * out_c + o);
                        }
                    }
                    *output++ = finish(acc, o, bias, quant_params, dw_conv_params);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
