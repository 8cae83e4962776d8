/*
 * arm_depthwise_conv_s4 (cmsis_nn_shim): arm_depthwise_conv_s8's layer with int4 weights packed
 * two a byte (see shim_nnfunctions.h); any channel multiplier. Output channel o reads input
 * channel o / ch_mult and filter tap (ky, kx) weight (ky * KW + kx) * C_OUT + o.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

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
    for (int32_t n = 0; n < input_dims->n; n++) {
        const int8_t *in = input + n * in_h * in_w * in_c;
        for (int32_t oy = 0; oy < out_h; oy++) {
            const int32_t y0 = oy * dw_conv_params->stride.h - dw_conv_params->padding.h;
            for (int32_t ox = 0; ox < out_w; ox++) {
                const int32_t x0 = ox * dw_conv_params->stride.w - dw_conv_params->padding.w;
                for (int32_t o = 0; o < out_c; o++) {
                    int32_t acc = bias ? bias[o] : 0;
                    for (int32_t ky = 0; ky < kh; ky++) {
                        const int32_t iy = y0 + ky;
                        if (iy < 0 || iy >= in_h) {
                            continue;
                        }
                        for (int32_t kx = 0; kx < kw; kx++) {
                            const int32_t ix = x0 + kx;
                            if (ix < 0 || ix >= in_w) {
                                continue;
                            }
                            const int32_t x = in[(iy * in_w + ix) * in_c + o / mult] + dw_conv_params->input_offset;
                            acc += x * shim_s4_weight(kernel, (ky * kw + kx) * out_c + o);
                        }
                    }
                    acc = arm_nn_requantize(acc, quant_params->multiplier[o], quant_params->shift[o]);
                    acc += dw_conv_params->output_offset;
                    acc = MAX(acc, dw_conv_params->activation.min);
                    acc = MIN(acc, dw_conv_params->activation.max);
                    *output++ = (int8_t)acc;
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
