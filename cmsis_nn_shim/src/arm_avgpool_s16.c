/*
 * arm_avgpool_s16 (cmsis_nn_shim): TFLite int16 average pooling, NHWC (see shim_nnfunctions.h).
 *
 * Each output is the sum over the window's pixels inside the input (padding is not counted)
 * divided by their count, halves rounded away from zero, then clamped. Two channels go
 * together, read as one word per pixel, each summed in an int32 (exact up to 65536 pixels a
 * window). With the DSP extension the function asks, as CMSIS-NN v7.0.0 does, for
 * arm_avgpool_s16_get_buffer_size() bytes of scratch (one int32 per channel, which its DSP
 * path sums into) and refuses a missing buffer; the shim's sums need none.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

static inline int16_t avg_of(int32_t sum, int32_t count, int32_t act_min, int32_t act_max)
{
    const int32_t half = count / 2;
    int32_t v = (sum > 0 ? sum + half : sum - half) / count; /* C division truncates */
    v = MAX(v, act_min);
    v = MIN(v, act_max);
    return (int16_t)v;
}

arm_cmsis_nn_status arm_avgpool_s16(const cmsis_nn_context *ctx,
                                    const cmsis_nn_pool_params *pool_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int16_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int16_t *output_data)
{
    const int32_t in_h = input_dims->h, in_w = input_dims->w, ch = input_dims->c;
    const int32_t out_h = output_dims->h, out_w = output_dims->w;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t act_min = pool_params->activation.min, act_max = pool_params->activation.max;
    if (input_dims->n < 1) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if ((ctx == NULL || ctx->buf == NULL) && arm_avgpool_s16_get_buffer_size(out_w, ch) > 0) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    for (int32_t b = 0; b < input_dims->n; b++) {
        const int16_t *in = input_data + b * in_h * in_w * ch;
        int16_t *out = output_data + b * out_h * out_w * ch;
        for (int32_t oy = 0; oy < out_h; oy++) {
            const int32_t y0 = oy * pool_params->stride.h - pool_params->padding.h;
            const int32_t ky0 = MAX(0, -y0), ky1 = MIN(kh, in_h - y0);
            for (int32_t ox = 0; ox < out_w; ox++) {
                const int32_t x0 = ox * pool_params->stride.w - pool_params->padding.w;
                const int32_t kx0 = MAX(0, -x0), kx1 = MIN(kw, in_w - x0);
                const int32_t rows = ky1 - ky0, cols = kx1 - kx0;
                if (rows <= 0 || cols <= 0) {
                    return ARM_CMSIS_NN_ARG_ERROR; /* a window over padding only */
                }
                const int32_t count = rows * cols;
                const int16_t *win = in + ((y0 + ky0) * in_w + x0 + kx0) * ch;
                int16_t *o = out + (oy * out_w + ox) * ch;
                int32_t c = 0;
                for (; c + 2 <= ch; c += 2) {
                    int32_t s0 = 0, s1 = 0;
                    for (int32_t ky = 0; ky < rows; ky++) {
                        for (int32_t kx = 0; kx < cols; kx++) {
                            const int32_t v = arm_nn_read_q15x2(win + (ky * in_w + kx) * ch + c);
                            s0 += (int16_t)v;
                            s1 += v >> 16;
                        }
                    }
                    o[c] = avg_of(s0, count, act_min, act_max);
                    o[c + 1] = avg_of(s1, count, act_min, act_max);
                }
                for (; c < ch; c++) {
                    int32_t sum = 0;
                    for (int32_t ky = 0; ky < rows; ky++) {
                        for (int32_t kx = 0; kx < cols; kx++) {
                            sum += win[(ky * in_w + kx) * ch + c];
                        }
                    }
                    o[c] = avg_of(sum, count, act_min, act_max);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

int32_t arm_avgpool_s16_get_buffer_size(const int dim_dst_width, const int ch_src)
{
    (void)dim_dst_width;
#if defined(ARM_MATH_DSP)
    return ch_src * (int32_t)sizeof(int32_t);
#else
    (void)ch_src;
    return 0;
#endif
}
