/*
 * arm_convolve_s4 (cmsis_nn_shim): arm_convolve_s8's layer with int4 weights packed two a byte
 * (see shim_nnfunctions.h).
 *
 * With a scratch buffer and a filter row a multiple of 8 weights long (every row then starts on
 * a word): two output pixels at a time, each pixel's taps gathered into an int16 column with the
 * input offset added, in the order shim_s4_dot8 meets a packed word's weights (taps outside the
 * input 0); every weight word is loaded once for the two pixels. Otherwise a direct loop, a
 * nibble per weight.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* the column of output pixel (oy, ox): tap p at shim_s4_slot(p) */
static void fill_column(int16_t *col, const int8_t *in, const cmsis_nn_dims *id, const cmsis_nn_dims *fd,
                        const cmsis_nn_conv_params *cp, int32_t oy, int32_t ox)
{
    const int32_t y0 = oy * cp->stride.h - cp->padding.h;
    const int32_t x0 = ox * cp->stride.w - cp->padding.w;
    int32_t p = 0;
    for (int32_t ky = 0; ky < fd->h; ky++) {
        const int32_t iy = y0 + ky;
        for (int32_t kx = 0; kx < fd->w; kx++) {
            const int32_t ix = x0 + kx;
            const int inside = iy >= 0 && iy < id->h && ix >= 0 && ix < id->w;
            const int8_t *src = inside ? in + (iy * id->w + ix) * id->c : in;
            for (int32_t c = 0; c < id->c; c++, p++) {
                col[shim_s4_slot(p)] = inside ? (int16_t)(src[c] + cp->input_offset) : 0;
            }
        }
    }
}

static inline int8_t finish(int32_t acc, int32_t o, const int32_t *bias, const cmsis_nn_per_channel_quant_params *qp,
                            const cmsis_nn_conv_params *cp)
{
    return shim_s4_output(acc, bias, o, qp->multiplier[o], qp->shift[o], cp->output_offset, cp->activation);
}

/* out0 and out1 for every output channel, from columns c0 and c1: each weight word serves both */
static void channels_two(const int8_t *filter, int32_t taps, int32_t out_c, const int16_t *c0, const int16_t *c1,
                         int8_t *out0, int8_t *out1, const int32_t *bias,
                         const cmsis_nn_per_channel_quant_params *qp, const cmsis_nn_conv_params *cp)
{
    const int8_t *w = filter;
    for (int32_t o = 0; o < out_c; o++) {
        uint32_t a0 = 0, a1 = 0;
        for (int32_t p = 0; p < taps; p += 8, w += 4) {
            const uint32_t word = (uint32_t)arm_nn_read_s8x4(w);
            a0 = shim_s4_dot8(word, c0 + p, a0);
            a1 = shim_s4_dot8(word, c1 + p, a1);
        }
        out0[o] = finish((int32_t)a0 >> 4, o, bias, qp, cp);
        out1[o] = finish((int32_t)a1 >> 4, o, bias, qp, cp);
    }
}

/* out0 for every output channel, from column c0 (the last pixel of an odd count) */
static void channels_one(const int8_t *filter, int32_t taps, int32_t out_c, const int16_t *c0, int8_t *out0,
                         const int32_t *bias, const cmsis_nn_per_channel_quant_params *qp,
                         const cmsis_nn_conv_params *cp)
{
    const int8_t *w = filter;
    for (int32_t o = 0; o < out_c; o++) {
        uint32_t a0 = 0;
        for (int32_t p = 0; p < taps; p += 8, w += 4) {
            a0 = shim_s4_dot8((uint32_t)arm_nn_read_s8x4(w), c0 + p, a0);
        }
        out0[o] = finish((int32_t)a0 >> 4, o, bias, qp, cp);
    }
}

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
    (void)bias_dims;
    const int32_t in_h = input_dims->h, in_w = input_dims->w, in_c = input_dims->c;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t out_h = output_dims->h, out_w = output_dims->w, out_c = output_dims->c;
    if (filter_dims->c != in_c || filter_dims->n != out_c) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t taps = kh * kw * in_c;
    const int32_t pixels = out_h * out_w;
    if (ctx && ctx->buf && (taps & 7) == 0 && taps <= 65536) {
        int16_t *c0 = (int16_t *)ctx->buf;
        int16_t *c1 = c0 + taps;
        for (int32_t n = 0; n < input_dims->n; n++) {
            const int8_t *in = input_data + n * in_h * in_w * in_c;
            int8_t *out = output_data + n * pixels * out_c;
            int32_t q = 0;
            for (; q + 2 <= pixels; q += 2, out += 2 * out_c) {
                fill_column(c0, in, input_dims, filter_dims, conv_params, q / out_w, q % out_w);
                fill_column(c1, in, input_dims, filter_dims, conv_params, (q + 1) / out_w, (q + 1) % out_w);
                channels_two(filter_data, taps, out_c, c0, c1, out, out + out_c, bias_data, quant_params, conv_params);
            }
            if (q < pixels) {
                fill_column(c0, in, input_dims, filter_dims, conv_params, q / out_w, q % out_w);
                channels_one(filter_data, taps, out_c, c0, out, bias_data, quant_params, conv_params);
            }
        }
        return ARM_CMSIS_NN_SUCCESS;
    }
    for (int32_t n = 0; n < input_dims->n; n++) {
        const int8_t *in = input_data + n * in_h * in_w * in_c;
        for (int32_t oy = 0; oy < out_h; oy++) {
            const int32_t y0 = oy * conv_params->stride.h - conv_params->padding.h;
            for (int32_t ox = 0; ox < out_w; ox++) {
                const int32_t x0 = ox * conv_params->stride.w - conv_params->padding.w;
                for (int32_t o = 0; o < out_c; o++) {
                    int32_t acc = 0;
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
                    *output_data++ = finish(acc, o, bias_data, quant_params, conv_params);
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
