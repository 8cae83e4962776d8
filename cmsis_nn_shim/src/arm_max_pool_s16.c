/*
 * arm_max_pool_s16 (cmsis_nn_shim): TFLite int16 max pooling, NHWC (see shim_nnfunctions.h).
 *
 * Each output is the largest of the window's pixels inside the input, then clamped. Two
 * channels go together, read as one word per pixel.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

static inline int16_t clamp_s16(int32_t v, int32_t act_min, int32_t act_max)
{
    v = MAX(v, act_min);
    v = MIN(v, act_max);
    return (int16_t)v;
}

arm_cmsis_nn_status arm_max_pool_s16(const cmsis_nn_context *ctx,
                                     const cmsis_nn_pool_params *pool_params,
                                     const cmsis_nn_dims *input_dims,
                                     const int16_t *src,
                                     const cmsis_nn_dims *filter_dims,
                                     const cmsis_nn_dims *output_dims,
                                     int16_t *dst)
{
    (void)ctx;
    const int32_t in_h = input_dims->h, in_w = input_dims->w, ch = input_dims->c;
    const int32_t out_h = output_dims->h, out_w = output_dims->w;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t act_min = pool_params->activation.min, act_max = pool_params->activation.max;
    if (input_dims->n < 1) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    for (int32_t b = 0; b < input_dims->n; b++) {
        const int16_t *in = src + b * in_h * in_w * ch;
        int16_t *out = dst + b * out_h * out_w * ch;
        for (int32_t oy = 0; oy < out_h; oy++) {
            const int32_t y0 = oy * pool_params->stride.h - pool_params->padding.h;
            const int32_t ky0 = MAX(0, -y0), ky1 = MIN(kh, in_h - y0);
            for (int32_t ox = 0; ox < out_w; ox++) {
                const int32_t x0 = ox * pool_params->stride.w - pool_params->padding.w;
                const int32_t kx0 = MAX(0, -x0), kx1 = MIN(kw, in_w - x0);
                const int32_t rows = ky1 - ky0, cols = kx1 - kx0;
                const int16_t *win = rows > 0 && cols > 0 ? in + ((y0 + ky0) * in_w + x0 + kx0) * ch : in;
                int16_t *o = out + (oy * out_w + ox) * ch;
                int32_t c = 0;
                /* INT16_MIN is no pixel's rival: the max of a non-empty window is the same */
                for (; c + 2 <= ch; c += 2) {
                    int32_t m0 = INT16_MIN, m1 = INT16_MIN;
                    for (int32_t ky = 0; ky < rows; ky++) {
                        for (int32_t kx = 0; kx < cols; kx++) {
                            const int32_t v = arm_nn_read_q15x2(win + (ky * in_w + kx) * ch + c);
                            m0 = MAX(m0, (int32_t)(int16_t)v);
                            m1 = MAX(m1, v >> 16);
                        }
                    }
                    o[c] = clamp_s16(m0, act_min, act_max);
                    o[c + 1] = clamp_s16(m1, act_min, act_max);
                }
                for (; c < ch; c++) {
                    int32_t m = INT16_MIN;
                    for (int32_t ky = 0; ky < rows; ky++) {
                        for (int32_t kx = 0; kx < cols; kx++) {
                            m = MAX(m, (int32_t)win[(ky * in_w + kx) * ch + c]);
                        }
                    }
                    o[c] = clamp_s16(m, act_min, act_max);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
