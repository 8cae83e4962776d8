/*
 * arm_avgpool_s8 (cmsis_nn_shim): TFLite int8 average pooling, NHWC (see shim_nnfunctions.h).
 *
 * Each output is the sum over the window's pixels inside the input (padding is not counted)
 * divided by their count, halves rounded away from zero, then clamped. With the DSP extension
 * four channels go together: SXTAB16 adds bytes 0/2 and 1/3 of a word into two pairs of 16-bit
 * sums, exact while a window holds at most 256 pixels (|sum| <= 256 * 128); larger windows sum
 * pixel by pixel into the int32 scratch buffer (arm_avgpool_s8_get_buffer_size bytes, one
 * int32 per channel, CMSIS-NN's own DSP-path size, so a caller sized for it fits either).
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

static inline int8_t avg_of(int32_t sum, int32_t count, int32_t act_min, int32_t act_max)
{
    const int32_t half = count / 2;
    int32_t v = (sum > 0 ? sum + half : sum - half) / count; /* C division truncates */
    v = MAX(v, act_min);
    v = MIN(v, act_max);
    return (int8_t)v;
}

arm_cmsis_nn_status arm_avgpool_s8(const cmsis_nn_context *ctx,
                                   const cmsis_nn_pool_params *pool_params,
                                   const cmsis_nn_dims *input_dims,
                                   const int8_t *input_data,
                                   const cmsis_nn_dims *filter_dims,
                                   const cmsis_nn_dims *output_dims,
                                   int8_t *output_data)
{
    const int32_t in_h = input_dims->h, in_w = input_dims->w, ch = input_dims->c;
    const int32_t out_h = output_dims->h, out_w = output_dims->w;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t act_min = pool_params->activation.min, act_max = pool_params->activation.max;
    if (input_dims->n < 1) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    /* as CMSIS-NN: no buffer where the function asks for one is an error */
    if ((ctx == NULL || ctx->buf == NULL) && arm_avgpool_s8_get_buffer_size(out_w, ch) > 0) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
#if defined(ARM_MATH_DSP)
    int32_t *sums = (int32_t *)ctx->buf;
#endif
    for (int32_t b = 0; b < input_dims->n; b++) {
        const int8_t *in = input_data + b * in_h * in_w * ch;
        int8_t *out = output_data + b * out_h * out_w * ch;
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
                const int8_t *win = in + ((y0 + ky0) * in_w + x0 + kx0) * ch;
                int8_t *o = out + (oy * out_w + ox) * ch;
                int32_t c = 0;
#if defined(ARM_MATH_DSP)
                if (count <= 256) {
                    for (; c + 4 <= ch; c += 4) {
                        uint32_t s02 = 0, s13 = 0;
                        for (int32_t ky = 0; ky < rows; ky++) {
                            for (int32_t kx = 0; kx < cols; kx++) {
                                const uint32_t v = (uint32_t)arm_nn_read_s8x4(win + (ky * in_w + kx) * ch + c);
                                s02 = __SXTAB16(s02, v);
                                s13 = __SXTAB16_RORn(s13, v, 8);
                            }
                        }
                        o[c] = avg_of((int16_t)s02, count, act_min, act_max);
                        o[c + 1] = avg_of((int16_t)s13, count, act_min, act_max);
                        o[c + 2] = avg_of((int16_t)(s02 >> 16), count, act_min, act_max);
                        o[c + 3] = avg_of((int16_t)(s13 >> 16), count, act_min, act_max);
                    }
                } else {
                    for (int32_t i = 0; i < ch; i++) {
                        sums[i] = 0;
                    }
                    for (int32_t ky = 0; ky < rows; ky++) {
                        for (int32_t kx = 0; kx < cols; kx++) {
                            const int8_t *px = win + (ky * in_w + kx) * ch;
                            for (int32_t i = 0; i < ch; i++) {
                                sums[i] += px[i];
                            }
                        }
                    }
                    for (; c < ch; c++) {
                        o[c] = avg_of(sums[c], count, act_min, act_max);
                    }
                }
#endif
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

int32_t arm_avgpool_s8_get_buffer_size(const int dim_dst_width, const int ch_src)
{
    (void)dim_dst_width;
#if defined(ARM_MATH_DSP)
    return ch_src * (int32_t)sizeof(int32_t);
#else
    (void)ch_src;
    return 0;
#endif
}
