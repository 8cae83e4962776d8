/*
 * arm_convolve_s8 (cmsis_nn_shim): TFLite int8 2-D convolution, NHWC input, OHWI filter,
 * per-channel requantization, optional bias, dilation and grouped convolution
 * (see shim_nnfunctions.h).
 *
 * im2col + GEMM: the taps of one output pixel (for one group) are gathered into an int16
 * column with the input offset added (taps outside the input, and the rows / columns an
 * upscale inserts, are 0, i.e. the zero point);
 * two columns are then multiplied by the filter rows of the group, two output channels at a
 * time, so every filter load serves two pixels and every column load two channels.
 *
 * With the DSP extension each 4 filter bytes are widened by SXTB16 into (w0, w2) and
 * (w1, w3); the column stores each group of 4 taps in the matching order x0 x2 x1 x3, so
 * two SMLADs take 4 MACs. The last (depth mod 4) taps stay in order and use plain C.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* shim_convolve_s8_const.c compiles this file again as that entry, its channel loop fully
   unrolled (see there) */
#ifndef SHIM_CONVOLVE_S8
#define SHIM_CONVOLVE_S8 arm_convolve_s8
#endif
#ifndef SHIM_CHANNEL_LOOP
#define SHIM_CHANNEL_LOOP
#endif

static inline int32_t round_up_4(int32_t v) { return (v + 3) & ~3; }

/* where tap p of a column is stored */
static inline int32_t tap_slot(int32_t p, int32_t depth4)
{
#if defined(ARM_MATH_DSP)
    if (p < depth4) {
        const int32_t r = p & 3;
        return (p & ~3) + (r == 1 ? 2 : r == 2 ? 1 : r);
    }
#else
    (void)depth4;
#endif
    return p;
}

/* the im2col column of output pixel (oy, ox), group g; in_h x in_w is the (upscaled) size,
   up_y / up_x are 1 where the input is upscaled 2x: odd rows / columns are the zero point.
   Inlined at both calls below, so the usual call (no upscale) has its own copy without the
   upscale tests: kws_int8 separate (nothing specialized) 15.22 M -> 14.21 M est. cycles */
static inline __attribute__((always_inline)) void fill_column(int16_t *col, const int8_t *in, int32_t in_h, int32_t in_w, int32_t in_c, int32_t g,
                        int32_t ck, int32_t kh, int32_t kw, int32_t oy, int32_t ox,
                        const cmsis_nn_conv_params *cp, int32_t depth4, int32_t up_y, int32_t up_x)
{
    const int32_t y0 = oy * cp->stride.h - cp->padding.h;
    const int32_t x0 = ox * cp->stride.w - cp->padding.w;
    const int32_t in_off = cp->input_offset;
    int32_t p = 0;
    for (int32_t ky = 0; ky < kh; ky++) {
        const int32_t iy = y0 + ky * cp->dilation.h;
        for (int32_t kx = 0; kx < kw; kx++) {
            const int32_t ix = x0 + kx * cp->dilation.w;
            if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w || (iy & up_y) || (ix & up_x)) {
                for (int32_t c = 0; c < ck; c++, p++) {
                    col[tap_slot(p, depth4)] = 0;
                }
            } else {
                const int8_t *src = in + ((iy >> up_y) * (in_w >> up_x) + (ix >> up_x)) * in_c + g * ck;
                for (int32_t c = 0; c < ck; c++, p++) {
                    col[tap_slot(p, depth4)] = (int16_t)(src[c] + in_off);
                }
            }
        }
    }
}

static inline int8_t requant(uint32_t acc, int32_t oc, const int32_t *bias,
                             const cmsis_nn_per_channel_quant_params *qp, const cmsis_nn_conv_params *cp)
{
    if (bias) {
        acc += (uint32_t)bias[oc];
    }
    int32_t v = arm_nn_requantize((int32_t)acc, qp->multiplier[oc], qp->shift[oc]) + cp->output_offset;
    v = MAX(v, cp->activation.min);
    v = MIN(v, cp->activation.max);
    return (int8_t)v;
}

/* filter row f (int8) . column c (int16, stored by tap_slot) over depth taps */
static inline uint32_t dot_col(const int8_t *f, const int16_t *c, int32_t depth, int32_t depth4)
{
    uint32_t acc = 0;
    int32_t p = 0;
#if defined(ARM_MATH_DSP)
    for (; p < depth4; p += 4) {
        const uint32_t w = (uint32_t)arm_nn_read_s8x4(f + p);
        acc = __SMLAD(__SXTB16(w), (uint32_t)arm_nn_read_q15x2(c + p), acc);
        acc = __SMLAD(__SXTB16_RORn(w, 8), (uint32_t)arm_nn_read_q15x2(c + p + 2), acc);
    }
#else
    (void)depth4;
#endif
    for (; p < depth; p++) {
        acc += (uint32_t)(f[p] * c[p]);
    }
    return acc;
}

/* channels [0, m) of group g for two pixels (out0, out1 point at channel g*m of the pixel) */
static void gemm_two(const int8_t *wg, int32_t m, int32_t depth, int32_t depth4, const int16_t *c0,
                     const int16_t *c1, int8_t *out0, int8_t *out1, int32_t oc0, const int32_t *bias,
                     const cmsis_nn_per_channel_quant_params *qp, const cmsis_nn_conv_params *cp)
{
    int32_t o = 0;
    SHIM_CHANNEL_LOOP
    for (; o + 2 <= m; o += 2) {
        const int8_t *f0 = wg + o * depth;
        const int8_t *f1 = f0 + depth;
        uint32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0; /* a<channel><pixel> */
        int32_t p = 0;
#if defined(ARM_MATH_DSP)
        /* 4 x 4 taps per trip: unrolled further (a specialized depth is a constant, so the
           specializing variants' threshold would unroll it fully) the loads are hoisted and
           the accumulators spill: kws_int8's 64x64 pointwise conv 1.21M -> 1.89M est. cycles */
#if defined(__clang__) /* gcc builds the shim for the host tests */
#pragma clang loop unroll_count(4)
#endif
        for (; p < depth4; p += 4) {
            const uint32_t w0 = (uint32_t)arm_nn_read_s8x4(f0 + p);
            const uint32_t w1 = (uint32_t)arm_nn_read_s8x4(f1 + p);
            const uint32_t w0lo = __SXTB16(w0), w0hi = __SXTB16_RORn(w0, 8);
            const uint32_t w1lo = __SXTB16(w1), w1hi = __SXTB16_RORn(w1, 8);
            const uint32_t x0a = (uint32_t)arm_nn_read_q15x2(c0 + p), x0b = (uint32_t)arm_nn_read_q15x2(c0 + p + 2);
            const uint32_t x1a = (uint32_t)arm_nn_read_q15x2(c1 + p), x1b = (uint32_t)arm_nn_read_q15x2(c1 + p + 2);
            a00 = __SMLAD(w0lo, x0a, a00);
            a00 = __SMLAD(w0hi, x0b, a00);
            a01 = __SMLAD(w0lo, x1a, a01);
            a01 = __SMLAD(w0hi, x1b, a01);
            a10 = __SMLAD(w1lo, x0a, a10);
            a10 = __SMLAD(w1hi, x0b, a10);
            a11 = __SMLAD(w1lo, x1a, a11);
            a11 = __SMLAD(w1hi, x1b, a11);
        }
#endif
        for (; p < depth; p++) {
            const int32_t x0 = c0[p], x1 = c1[p];
            a00 += (uint32_t)(f0[p] * x0);
            a01 += (uint32_t)(f0[p] * x1);
            a10 += (uint32_t)(f1[p] * x0);
            a11 += (uint32_t)(f1[p] * x1);
        }
        out0[o] = requant(a00, oc0 + o, bias, qp, cp);
        out1[o] = requant(a01, oc0 + o, bias, qp, cp);
        out0[o + 1] = requant(a10, oc0 + o + 1, bias, qp, cp);
        out1[o + 1] = requant(a11, oc0 + o + 1, bias, qp, cp);
    }
    if (o < m) {
        const int8_t *f0 = wg + o * depth;
        out0[o] = requant(dot_col(f0, c0, depth, depth4), oc0 + o, bias, qp, cp);
        out1[o] = requant(dot_col(f0, c1, depth, depth4), oc0 + o, bias, qp, cp);
    }
}

#ifndef SHIM_CONVOLVE_S8_STORAGE
#define SHIM_CONVOLVE_S8_STORAGE
#endif
SHIM_CONVOLVE_S8_STORAGE arm_cmsis_nn_status SHIM_CONVOLVE_S8(const cmsis_nn_context *ctx,
                                    const cmsis_nn_conv_params *conv_params,
                                    const cmsis_nn_per_channel_quant_params *quant_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int8_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const int8_t *filter_data,
                                    const cmsis_nn_dims *bias_dims,
                                    const int32_t *bias_data,
                                    const cmsis_nn_dims *upscale_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int8_t *output_data)
{
    (void)bias_dims;
    if (ctx == NULL || ctx->buf == NULL) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t in_h = input_dims->h, in_w = input_dims->w, in_c = input_dims->c;
    const int32_t ck = filter_dims->c, kh = filter_dims->h, kw = filter_dims->w;
    const int32_t out_h = output_dims->h, out_w = output_dims->w, out_c = output_dims->c;
    if (ck <= 0 || in_c % ck != 0) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t groups = in_c / ck;
    if (out_c % groups != 0) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t m = out_c / groups;
    const int32_t depth = kh * kw * ck;
#if defined(ARM_MATH_DSP)
    const int32_t depth4 = depth & ~3;
#else
    const int32_t depth4 = 0;
#endif
    int16_t *col0 = (int16_t *)ctx->buf;
    int16_t *col1 = col0 + round_up_4(depth);
    const int32_t pixels = out_h * out_w;
    const int32_t up_y = upscale_dims && upscale_dims->h == 2;
    const int32_t up_x = upscale_dims && upscale_dims->w == 2;

    for (int32_t b = 0; b < input_dims->n; b++) {
        const int8_t *in = input_data + b * (in_h >> up_y) * (in_w >> up_x) * in_c;
        int8_t *out = output_data + b * pixels * out_c;
        for (int32_t g = 0; g < groups; g++) {
            const int8_t *wg = filter_data + g * m * depth;
            int32_t pending = -1; /* pixel whose column waits in col0 */
            for (int32_t px = 0; px < pixels; px++) {
                int16_t *col = pending < 0 ? col0 : col1;
                if (up_y | up_x) {
                    fill_column(col, in, in_h, in_w, in_c, g, ck, kh, kw, px / out_w, px % out_w, conv_params,
                                depth4, up_y, up_x);
                } else {
                    fill_column(col, in, in_h, in_w, in_c, g, ck, kh, kw, px / out_w, px % out_w, conv_params,
                                depth4, 0, 0);
                }
                if (pending < 0) {
                    pending = px;
                    continue;
                }
                gemm_two(wg, m, depth, depth4, col0, col1, out + pending * out_c + g * m, out + px * out_c + g * m,
                         g * m, bias_data, quant_params, conv_params);
                pending = -1;
            }
            if (pending >= 0) {
                int8_t *o = out + pending * out_c + g * m;
                for (int32_t c = 0; c < m; c++) {
                    o[c] = requant(dot_col(wg + c * depth, col0, depth, depth4), g * m + c, bias_data, quant_params,
                                   conv_params);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

#ifndef SHIM_CONVOLVE_S8_VARIANT
int32_t arm_convolve_s8_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    const int32_t depth = filter_dims->w * filter_dims->h * input_dims->c;
    return 2 * round_up_4(depth) * (int32_t)sizeof(int16_t);
}
#endif
