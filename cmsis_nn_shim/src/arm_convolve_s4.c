/*
 * arm_convolve_s4 (cmsis_nn_shim): arm_convolve_s8's layer with int4 weights packed two a byte
 * (see shim_nnfunctions.h). A direct loop over output pixels, channels and taps: each weight is
 * read once per output pixel, unpacked from its nibble; taps outside the input add nothing
 * (the zero point times the weight, with the input offset, is 0).
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

arm_cmsis_nn_status arm_convolve_s4(const cmsis_nn_context *ctx,
                                    const cmsis_nn_conv_params *conv_params,
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
    const int32_t in_h = input_dims->h, in_w = input_dims->w, in_c = input_dims->c;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t out_h = output_dims->h, out_w = output_dims->w, out_c = output_dims->c;
    if (filter_dims->c != in_c || filter_dims->n != out_c) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t taps = kh * kw * in_c;
    for (int32_t n = 0; n < input_dims->n; n++) {
        const int8_t *in = input_data + n * in_h * in_w * in_c;
        for (int32_t oy = 0; oy < out_h; oy++) {
            const int32_t y0 = oy * conv_params->stride.h - conv_params->padding.h;
            for (int32_t ox = 0; ox < out_w; ox++) {
                const int32_t x0 = ox * conv_params->stride.w - conv_params->padding.w;
                for (int32_t o = 0; o < out_c; o++) {
                    int32_t acc = bias_data ? bias_data[o] : 0;
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
                            const int8_t *src = in + (iy * in_w + ix) * in_c;
                            const int32_t w0 = o * taps + (ky * kw + kx) * in_c;
                            for (int32_t c = 0; c < in_c; c++) {
                                acc += (src[c] + conv_params->input_offset) * shim_s4_weight(filter_data, w0 + c);
                            }
                        }
                    }
                    acc = arm_nn_requantize(acc, quant_params->multiplier[o], quant_params->shift[o]);
                    acc += conv_params->output_offset;
                    acc = MAX(acc, conv_params->activation.min);
                    acc = MIN(acc, conv_params->activation.max);
                    *output_data++ = (int8_t)acc;
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

int32_t arm_convolve_s4_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    return arm_convolve_s8_get_buffer_size(input_dims, filter_dims);
}
