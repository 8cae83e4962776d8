/*
 * arm_convolve_s16 (cmsis_nn_shim): TFLite 16x8 2-D convolution (int16 activations, int8
 * weights), NHWC input, OHWI filter, per-channel requantization, int64 or int32 bias,
 * stride, padding and dilation (see shim_nnfunctions.h).
 *
 * im2col + GEMM: the taps of two output pixels (taps outside the input are 0) are gathered
 * into the scratch buffer, then each pair of filter rows meets both, two channels x two pixels,
 * so every filter word serves two pixels and every input word two channels. Pixels pair
 * across batches (the output is one NHWC array).
 *
 * The buffer holds 2 * depth int16 (depth = KH * KW * C_IN, CMSIS-NN v7.0.0's size). With the
 * DSP extension the first depth4 = depth & ~3 taps are stored in groups of four, pixel 0's
 * four then pixel 1's (8 halfwords a group), each four in the order x0 x2 x1 x3: SXTB16 widens
 * filter bytes w0..w3 into the halfword pairs (w0, w2) and (w1, w3), which meet the words
 * (x0, x2) and (x1, x3) in one SMLAD each. Sums of at most S16_BLOCK products go into an
 * int32 (exact: see there), then into the int64 sum. The remaining taps follow in order,
 * pixel 0's then pixel 1's, in plain C. Without the DSP extension depth4 is 0 and the two
 * columns lie one after the other, summed in int64.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* Products an int32 sum may take: |int16 * int8| <= 2^15 * 2^7 = 2^22 and 508 * 2^22 < 2^31,
   so SMLAD's sum (modulo 2^32) of up to 508 of them is the exact sum. A multiple of 4. */
#define S16_BLOCK 508

typedef struct
{
    const int64_t *bias64;
    const int32_t *bias32;
    int32_t is_int32_bias;
    const int32_t *mult;
    const int32_t *shift;
    int32_t act_min, act_max;
} s16_quant;

/* output channel oc of an exact sum: bias, requantization, clamp */
static inline __attribute__((always_inline)) int16_t s16_out(int64_t acc, int32_t oc, const s16_quant *q)
{
    int32_t v;
    if (q->is_int32_bias) {
        /* as v7.0.0: the sum and the int32 bias in an int32 (the exact sum's low 32 bits), the
           full multiplier (arm_nn_requantize) */
        uint32_t sum = (uint32_t)(uint64_t)acc;
        if (q->bias32) {
            sum += (uint32_t)q->bias32[oc];
        }
        v = arm_nn_requantize((int32_t)sum, q->mult[oc], q->shift[oc]);
    } else {
        if (q->bias64) {
            acc += q->bias64[oc];
        }
        v = arm_nn_requantize_s64(acc, REDUCE_MULTIPLIER(q->mult[oc]), q->shift[oc]);
    }
    v = MAX(v, q->act_min);
    v = MIN(v, q->act_max);
    return (int16_t)v;
}

/* where tap p of pixel k (0 or 1) is stored */
static inline int32_t tap_slot(int32_t p, int32_t k, int32_t depth, int32_t depth4)
{
    if (p < depth4) {
        const int32_t r = p & 3;
        return ((p >> 2) << 3) + (k << 2) + (((r & 1) << 1) | (r >> 1)); /* 0 1 2 3 -> 0 2 1 3 */
    }
    return 2 * depth4 + k * (depth - depth4) + (p - depth4);
}

/* the taps of output pixel (oy, ox) of the batch at `in` as pixel k of the buffer */
static void fill_column(int16_t *buf, int32_t k, const int16_t *in, int32_t oy, int32_t ox, int32_t in_h,
                        int32_t in_w, int32_t in_c, int32_t kh, int32_t kw, int32_t depth, int32_t depth4,
                        const cmsis_nn_conv_params *cp)
{
    const int32_t y0 = oy * cp->stride.h - cp->padding.h;
    const int32_t x0 = ox * cp->stride.w - cp->padding.w;
    int32_t p = 0;
    for (int32_t ky = 0; ky < kh; ky++) {
        const int32_t iy = y0 + ky * cp->dilation.h;
        for (int32_t kx = 0; kx < kw; kx++) {
            const int32_t ix = x0 + kx * cp->dilation.w;
            const int32_t inside = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
            const int16_t *src = inside ? in + (iy * in_w + ix) * in_c : in;
            int32_t c = 0;
#if defined(ARM_MATH_DSP)
            /* whole groups of four: two words in, two words out */
            if ((p & 3) == 0) {
                for (; c + 4 <= in_c && p + 4 <= depth4; c += 4, p += 4) {
                    uint32_t even = 0, odd = 0;
                    if (inside) {
                        const uint32_t lo = (uint32_t)arm_nn_read_q15x2(src + c);     /* x0 x1 */
                        const uint32_t hi = (uint32_t)arm_nn_read_q15x2(src + c + 2); /* x2 x3 */
                        even = __PKHBT(lo, hi, 16);                                   /* x0 x2 */
                        odd = __PKHTB(hi, lo, 16);                                    /* x1 x3 */
                    }
                    int16_t *dst = buf + (p << 1) + (k << 2);
                    memcpy(dst, &even, 4);
                    memcpy(dst + 2, &odd, 4);
                }
            }
#endif
            for (; c < in_c; c++, p++) {
                buf[tap_slot(p, k, depth, depth4)] = inside ? src[c] : 0;
            }
        }
    }
}

/* output channels of two pixels (out0, out1) from the buffer's two columns. A function of its
   own: inlined into arm_convolve_s16, its inner loop (13 live registers: 4 sums, 3 pointers, the
   count, the operands) spilled a pointer every trip. Unrolled twice, it takes 41 instructions for
   32 MACs: 12 LDR, 8 SXTB16, 16 SMLAD, 3 ADD, SUBS, BNE. */
static __attribute__((noinline)) void gemm_two(const int8_t *filter, int32_t out_c, int32_t depth, int32_t depth4,
                                               const int16_t *buf, int16_t *out0, int16_t *out1, const s16_quant *q)
{
    const int16_t *t0 = buf + 2 * depth4;   /* pixel 0's remaining taps */
    const int16_t *t1 = t0 + depth - depth4; /* pixel 1's */
    int32_t o = 0;
    for (; o + 2 <= out_c; o += 2) {
        const int8_t *f0 = filter + o * depth;
        const int8_t *f1 = f0 + depth;
        int64_t s00 = 0, s01 = 0, s10 = 0, s11 = 0; /* s<channel><pixel> */
#if defined(ARM_MATH_DSP)
        const int16_t *x = buf;
        const int8_t *g0 = f0, *g1 = f1;
        for (int32_t left = depth4; left > 0; left -= S16_BLOCK) {
            uint32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
#if defined(__clang__)
#pragma clang loop unroll_count(2)
#endif
            for (int32_t n = MIN(left, S16_BLOCK) >> 2; n > 0; n--) {
                const uint32_t w0 = (uint32_t)arm_nn_read_s8x4_ia(&g0);
                const uint32_t w1 = (uint32_t)arm_nn_read_s8x4_ia(&g1);
                const uint32_t w0e = __SXTB16(w0), w0o = __SXTB16_RORn(w0, 8); /* (w0, w2) (w1, w3) */
                const uint32_t w1e = __SXTB16(w1), w1o = __SXTB16_RORn(w1, 8);
                const uint32_t x0e = (uint32_t)arm_nn_read_q15x2(x), x0o = (uint32_t)arm_nn_read_q15x2(x + 2);
                const uint32_t x1e = (uint32_t)arm_nn_read_q15x2(x + 4), x1o = (uint32_t)arm_nn_read_q15x2(x + 6);
                x += 8;
                a00 = __SMLAD(w0e, x0e, a00);
                a00 = __SMLAD(w0o, x0o, a00);
                a01 = __SMLAD(w0e, x1e, a01);
                a01 = __SMLAD(w0o, x1o, a01);
                a10 = __SMLAD(w1e, x0e, a10);
                a10 = __SMLAD(w1o, x0o, a10);
                a11 = __SMLAD(w1e, x1e, a11);
                a11 = __SMLAD(w1o, x1o, a11);
            }
            s00 += (int32_t)a00;
            s01 += (int32_t)a01;
            s10 += (int32_t)a10;
            s11 += (int32_t)a11;
        }
#endif
        for (int32_t p = depth4; p < depth; p++) {
            const int32_t w0 = f0[p], w1 = f1[p], x0 = t0[p - depth4], x1 = t1[p - depth4];
            s00 += (int64_t)w0 * x0; /* SMLAL */
            s01 += (int64_t)w0 * x1;
            s10 += (int64_t)w1 * x0;
            s11 += (int64_t)w1 * x1;
        }
        out0[o] = s16_out(s00, o, q);
        out1[o] = s16_out(s01, o, q);
        out0[o + 1] = s16_out(s10, o + 1, q);
        out1[o + 1] = s16_out(s11, o + 1, q);
    }
    if (o < out_c) {
        const int8_t *f0 = filter + o * depth;
        int64_t s00 = 0, s01 = 0;
#if defined(ARM_MATH_DSP)
        const int16_t *x = buf;
        const int8_t *g0 = f0;
        for (int32_t left = depth4; left > 0; left -= S16_BLOCK) {
            uint32_t a00 = 0, a01 = 0;
            for (int32_t n = MIN(left, S16_BLOCK) >> 2; n > 0; n--, x += 8) {
                const uint32_t w0 = (uint32_t)arm_nn_read_s8x4_ia(&g0);
                const uint32_t w0e = __SXTB16(w0), w0o = __SXTB16_RORn(w0, 8);
                a00 = __SMLAD(w0e, (uint32_t)arm_nn_read_q15x2(x), a00);
                a00 = __SMLAD(w0o, (uint32_t)arm_nn_read_q15x2(x + 2), a00);
                a01 = __SMLAD(w0e, (uint32_t)arm_nn_read_q15x2(x + 4), a01);
                a01 = __SMLAD(w0o, (uint32_t)arm_nn_read_q15x2(x + 6), a01);
            }
            s00 += (int32_t)a00;
            s01 += (int32_t)a01;
        }
#endif
        for (int32_t p = depth4; p < depth; p++) {
            s00 += (int64_t)f0[p] * t0[p - depth4];
            s01 += (int64_t)f0[p] * t1[p - depth4];
        }
        out0[o] = s16_out(s00, o, q);
        out1[o] = s16_out(s01, o, q);
    }
}

/* output channels of one pixel (out0) from the buffer's pixel-0 column (an odd pixel count's last) */
static __attribute__((noinline)) void gemm_one(const int8_t *filter, int32_t out_c, int32_t depth, int32_t depth4,
                                               const int16_t *buf, int16_t *out0, const s16_quant *q)
{
    const int16_t *t0 = buf + 2 * depth4;
    for (int32_t o = 0; o < out_c; o++) {
        const int8_t *f0 = filter + o * depth;
        int64_t s = 0;
#if defined(ARM_MATH_DSP)
        const int16_t *x = buf;
        const int8_t *g0 = f0;
        for (int32_t left = depth4; left > 0; left -= S16_BLOCK) {
            uint32_t a = 0;
            for (int32_t n = MIN(left, S16_BLOCK) >> 2; n > 0; n--, x += 8) {
                const uint32_t w0 = (uint32_t)arm_nn_read_s8x4_ia(&g0);
                a = __SMLAD(__SXTB16(w0), (uint32_t)arm_nn_read_q15x2(x), a);
                a = __SMLAD(__SXTB16_RORn(w0, 8), (uint32_t)arm_nn_read_q15x2(x + 2), a);
            }
            s += (int32_t)a;
        }
#endif
        for (int32_t p = depth4; p < depth; p++) {
            s += (int64_t)f0[p] * t0[p - depth4];
        }
        out0[o] = s16_out(s, o, q);
    }
}

arm_cmsis_nn_status arm_convolve_s16(const cmsis_nn_context *ctx,
                                     const cmsis_nn_conv_params *conv_params,
                                     const cmsis_nn_per_channel_quant_params *quant_params,
                                     const cmsis_nn_dims *input_dims,
                                     const int16_t *input_data,
                                     const cmsis_nn_dims *filter_dims,
                                     const int8_t *filter_data,
                                     const cmsis_nn_dims *bias_dims,
                                     const cmsis_nn_bias_data *bias_data,
                                     const cmsis_nn_dims *output_dims,
                                     int16_t *output_data)
{
    (void)bias_dims;
    if (ctx == NULL || ctx->buf == NULL) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t in_h = input_dims->h, in_w = input_dims->w, in_c = input_dims->c;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t out_h = output_dims->h, out_w = output_dims->w, out_c = output_dims->c;
    const int32_t depth = kh * kw * in_c;
#if defined(ARM_MATH_DSP)
    const int32_t depth4 = depth & ~3;
#else
    const int32_t depth4 = 0;
#endif
    const int32_t is32 = bias_data != NULL && bias_data->is_int32_bias;
    const void *bias = bias_data != NULL ? bias_data->data : NULL;
    const s16_quant q = {is32 ? NULL : (const int64_t *)bias, is32 ? (const int32_t *)bias : NULL, is32,
                         quant_params->multiplier, quant_params->shift,
                         conv_params->activation.min, conv_params->activation.max};
    int16_t *buf = (int16_t *)ctx->buf;
    const int32_t per_batch = out_h * out_w;
    const int32_t pixels = input_dims->n * per_batch;
    int32_t pending = -1; /* the pixel waiting in the buffer as pixel 0 */
    for (int32_t px = 0; px < pixels; px++) {
        const int32_t b = px / per_batch, r = px - b * per_batch;
        const int16_t *in = input_data + b * in_h * in_w * in_c;
        fill_column(buf, pending < 0 ? 0 : 1, in, r / out_w, r % out_w, in_h, in_w, in_c, kh, kw, depth, depth4,
                    conv_params);
        if (pending < 0) {
            pending = px;
            continue;
        }
        gemm_two(filter_data, out_c, depth, depth4, buf, output_data + pending * out_c, output_data + px * out_c, &q);
        pending = -1;
    }
    if (pending >= 0) {
        gemm_one(filter_data, out_c, depth, depth4, buf, output_data + pending * out_c, &q);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

int32_t arm_convolve_s16_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    return 2 * filter_dims->w * filter_dims->h * input_dims->c * (int32_t)sizeof(int16_t);
}
