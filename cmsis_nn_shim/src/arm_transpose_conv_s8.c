/*
 * arm_transpose_conv_s8 (cmsis_nn_shim): TFLite int8 transposed convolution (see
 * shim_nnfunctions.h).
 *
 * Gathered per output pixel rather than scattered per input pixel: output row y takes input
 * row iy through filter row ky where iy * stride - pad + ky = y, i.e. the ky congruent to
 * y + pad modulo the stride, so no int32 buffer of partial rows is needed. Integer sums in
 * another order are the same sums.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* The first tap t >= 0 with t == (pos + pad) mod stride whose input index (pos + pad - t) /
   stride is below size; the taps then step by stride while the index stays >= 0. */
static int32_t first_tap(int32_t pos, int32_t pad, int32_t stride, int32_t size)
{
    const int32_t q = pos + pad;
    int32_t t = q % stride;
    if (t < 0)
        t += stride;
    if (q - t >= size * stride) /* input index beyond the last row: skip ahead */
        t += ((q - t) / stride - (size - 1)) * stride;
    return t;
}

arm_cmsis_nn_status arm_transpose_conv_s8(const cmsis_nn_context *ctx,
                                          const cmsis_nn_context *output_ctx,
                                          const cmsis_nn_transpose_conv_params *transpose_conv_params,
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
    (void)output_ctx;
    (void)bias_dims;
    const cmsis_nn_transpose_conv_params *p = transpose_conv_params;
    const int32_t in_h = input_dims->h, in_w = input_dims->w, in_c = input_dims->c;
    const int32_t k_h = filter_dims->h, k_w = filter_dims->w;
    const int32_t out_h = output_dims->h, out_w = output_dims->w, out_c = output_dims->c;
    const int32_t s_h = p->stride.h, s_w = p->stride.w;
    if (filter_dims->n != out_c || filter_dims->c != in_c || s_h < 1 || s_w < 1)
        return ARM_CMSIS_NN_ARG_ERROR;
    for (int32_t n = 0; n < input_dims->n; n++) {
        const int8_t *image = input_data + n * in_h * in_w * in_c;
        for (int32_t y = 0; y < out_h; y++) {
            const int32_t ky0 = first_tap(y, p->padding.h, s_h, in_h);
            for (int32_t x = 0; x < out_w; x++) {
                const int32_t kx0 = first_tap(x, p->padding.w, s_w, in_w);
                for (int32_t o = 0; o < out_c; o++) {
                    int32_t acc = bias_data ? bias_data[o] : 0;
                    for (int32_t ky = ky0; ky < k_h; ky += s_h) {
                        const int32_t iy = (y + p->padding.h - ky) / s_h;
                        if (iy < 0)
                            break;
                        for (int32_t kx = kx0; kx < k_w; kx += s_w) {
                            const int32_t ix = (x + p->padding.w - kx) / s_w;
                            if (ix < 0)
                                break;
                            const int8_t *src = image + (iy * in_w + ix) * in_c;
                            const int8_t *f = filter_data + ((o * k_h + ky) * k_w + kx) * in_c;
                            for (int32_t c = 0; c < in_c; c++)
                                acc += ((int32_t)src[c] + p->input_offset) * f[c];
                        }
                    }
                    int32_t v = arm_nn_requantize(acc, quant_params->multiplier[o], quant_params->shift[o]);
                    v += p->output_offset;
                    v = MAX(v, p->activation.min);
                    v = MIN(v, p->activation.max);
                    *output_data++ = (int8_t)v;
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

int32_t arm_transpose_conv_s8_get_buffer_size(const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                              const cmsis_nn_dims *input_dims,
                                              const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *out_dims)
{
    const int32_t s_h = transpose_conv_params->stride.h, s_w = transpose_conv_params->stride.w;
    /* v7.0.0 compares the filter's width with stride.h here; kept, so sizes agree */
    const int32_t buf_x = ((input_dims->w - 1) * s_w + MAX(filter_dims->w, s_h)) * out_dims->c;
    return buf_x * MAX(filter_dims->h, s_h) * (int32_t)sizeof(int32_t);
}
