/*
 * arm_convolve_1x1_s8_fast, arm_convolve_1x1_s8 (cmsis_nn_shim): a 1x1 convolution without
 * padding, unit stride (_fast) or any stride, as a product of input pixels (rows of C_IN int8)
 * and the filter (C_OUT rows of C_IN). The results are arm_convolve_s8's; no scratch buffer
 * (CMSIS-NN v7.0.0 asks for none when it is not built by Arm Compiler 6,
 * arm_convolve_1x1_s8_fast_get_buffer_size).
 *
 * Two output channels times two pixels at a time, the input offset's share of each dot product
 * added once per channel (conv_1x1_rows). With the DSP extension four input bytes and four filter
 * bytes are widened alike by SXTB16 into (v0, v2) and (v1, v3), and two SMLADs take the 4 MACs
 * of a pixel and a channel. The last (C_IN mod 4) taps use plain C.
 */
#include "shim_conv_forms.h"
#include "shim_nnsupportfunctions.h"

/* The general form's code, inlined into the 1x1 forms: with two im2col columns on the stack it
   is faster than the 1x1 kernel below (64x64 pointwise: 1.62 M against 1.72 M est. cycles
   unspecialized), and in the form's own body LLVM's function specialization (O2's IPSCCP, before
   inlining) copies it per call as it copied arm_convolve_s8 when capture called that. */
#define SHIM_CONVOLVE_S8 shim_convolve_s8_in_1x1
#define SHIM_CONVOLVE_S8_VARIANT
#define SHIM_CONVOLVE_S8_STORAGE static inline __attribute__((always_inline))
#include "arm_convolve_s8.c"
#define SHIM_1X1_STACK_DEPTH 256

static inline int8_t requant_1x1(uint32_t acc, int32_t oc, const int32_t *bias,
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

/* x . f over n taps, x and f int8 (the input offset is added apart: conv_1x1_rows) */
static inline uint32_t dot_1x1(const int8_t *x, const int8_t *f, int32_t n)
{
    uint32_t acc = 0;
    int32_t p = 0;
#if defined(ARM_MATH_DSP)
    for (; p + 4 <= n; p += 4) {
        const uint32_t xv = (uint32_t)arm_nn_read_s8x4(x + p), wv = (uint32_t)arm_nn_read_s8x4(f + p);
        acc = __SMLAD(__SXTB16(wv), __SXTB16(xv), acc);
        acc = __SMLAD(__SXTB16_RORn(wv, 8), __SXTB16_RORn(xv, 8), acc);
    }
#endif
    for (; p < n; p++) {
        acc += (uint32_t)(x[p] * f[p]);
    }
    return acc;
}

/* in_off * the sum of filter row f: what the input offset adds to each of its dot products */
static inline uint32_t offset_term(const int8_t *f, int32_t n, int32_t in_off)
{
    /* plain C: an SMLAD form (two SXTB16s and two SMLADs with (1, 1) per word) measured slower
       in kws_int8's dims build, 1.09 M -> 1.13 M est. cycles per pointwise conv */
    uint32_t sum = 0;
    for (int32_t p = 0; p < n; p++) {
        sum += (uint32_t)f[p];
    }
    return sum * (uint32_t)in_off;
}

/* `rows` pixels, pixel r at lhs + r * lhs_stride (C_IN = n int8), each to C_OUT = m int8 at
   out + r * m. Output channels outermost: a pair's offset terms are computed once, then every
   pair of pixels takes (x + in_off) . f as x . f + in_off * sum(f) (exact modulo 2^32, as the
   sums wrap), so the inner loop widens input and filter alike with SXTB16. */
static void conv_1x1_rows(const int8_t *lhs, int32_t rows, int32_t lhs_stride, int32_t n, const int8_t *filter,
                          int32_t m, const int32_t *bias, const cmsis_nn_per_channel_quant_params *qp,
                          const cmsis_nn_conv_params *cp, int8_t *out)
{
    const int32_t in_off = cp->input_offset;
    int32_t o = 0;
    for (; o + 2 <= m; o += 2) {
        const int8_t *f0 = filter + o * n;
        const int8_t *f1 = f0 + n;
        const uint32_t k0 = offset_term(f0, n, in_off), k1 = offset_term(f1, n, in_off);
        int32_t r = 0;
        for (; r + 2 <= rows; r += 2) {
            const int8_t *x0 = lhs + r * lhs_stride;
            const int8_t *x1 = x0 + lhs_stride;
            uint32_t a00 = k0, a01 = k0, a10 = k1, a11 = k1; /* a<channel><pixel> */
            int32_t p = 0;
#if defined(ARM_MATH_DSP)
            for (; p + 4 <= n; p += 4) {
                const uint32_t xa = (uint32_t)arm_nn_read_s8x4(x0 + p), xb = (uint32_t)arm_nn_read_s8x4(x1 + p);
                const uint32_t w0 = (uint32_t)arm_nn_read_s8x4(f0 + p), w1 = (uint32_t)arm_nn_read_s8x4(f1 + p);
                const uint32_t xa02 = __SXTB16(xa), xb02 = __SXTB16(xb);
                const uint32_t w002 = __SXTB16(w0), w102 = __SXTB16(w1);
                a00 = __SMLAD(w002, xa02, a00);
                a01 = __SMLAD(w002, xb02, a01);
                a10 = __SMLAD(w102, xa02, a10);
                a11 = __SMLAD(w102, xb02, a11);
                const uint32_t xa13 = __SXTB16_RORn(xa, 8), xb13 = __SXTB16_RORn(xb, 8);
                const uint32_t w013 = __SXTB16_RORn(w0, 8), w113 = __SXTB16_RORn(w1, 8);
                a00 = __SMLAD(w013, xa13, a00);
                a01 = __SMLAD(w013, xb13, a01);
                a10 = __SMLAD(w113, xa13, a10);
                a11 = __SMLAD(w113, xb13, a11);
            }
#endif
            for (; p < n; p++) {
                a00 += (uint32_t)(f0[p] * x0[p]);
                a01 += (uint32_t)(f0[p] * x1[p]);
                a10 += (uint32_t)(f1[p] * x0[p]);
                a11 += (uint32_t)(f1[p] * x1[p]);
            }
            out[r * m + o] = requant_1x1(a00, o, bias, qp, cp);
            out[r * m + m + o] = requant_1x1(a01, o, bias, qp, cp);
            out[r * m + o + 1] = requant_1x1(a10, o + 1, bias, qp, cp);
            out[r * m + m + o + 1] = requant_1x1(a11, o + 1, bias, qp, cp);
        }
        if (r < rows) {
            const int8_t *x0 = lhs + r * lhs_stride;
            out[r * m + o] = requant_1x1(k0 + dot_1x1(x0, f0, n), o, bias, qp, cp);
            out[r * m + o + 1] = requant_1x1(k1 + dot_1x1(x0, f1, n), o + 1, bias, qp, cp);
        }
    }
    if (o < m) {
        const int8_t *f0 = filter + o * n;
        const uint32_t k0 = offset_term(f0, n, in_off);
        for (int32_t r = 0; r < rows; r++) {
            out[r * m + o] = requant_1x1(k0 + dot_1x1(lhs + r * lhs_stride, f0, n), o, bias, qp, cp);
        }
    }
}

/* Unit stride, no padding: every pixel of every batch is one row, in order. */
SHIM_CONV_FORM(SHIM_CONV_1X1_FAST)
{
    (void)ctx;
    if (conv_params->padding.w != 0 || conv_params->padding.h != 0 || conv_params->stride.w != 1 ||
        conv_params->stride.h != 1) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (input_dims->c <= SHIM_1X1_STACK_DEPTH) {
        int16_t cols[2 * ((input_dims->c + 3) & ~3)];
        const cmsis_nn_context own = {cols, (int32_t)sizeof cols};
        return shim_convolve_s8_in_1x1(&own, conv_params, quant_params, input_dims, input_data, filter_dims,
                                       filter_data, bias_dims, bias_data, NULL, output_dims, output_data);
    }
    const int32_t rows = input_dims->n * input_dims->h * input_dims->w;
    conv_1x1_rows(input_data, rows, input_dims->c, input_dims->c, filter_data, output_dims->c, bias_data,
                  quant_params, conv_params, output_data);
    return ARM_CMSIS_NN_SUCCESS;
}

/* Any stride, no padding: output row y of batch b reads input row y * stride.h, every
   stride.w-th pixel of it. */
SHIM_CONV_FORM(SHIM_CONV_1X1)
{
    (void)ctx;
    if (conv_params->padding.w != 0 || conv_params->padding.h != 0) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (input_dims->c <= SHIM_1X1_STACK_DEPTH) {
        int16_t cols[2 * ((input_dims->c + 3) & ~3)];
        const cmsis_nn_context own = {cols, (int32_t)sizeof cols};
        return shim_convolve_s8_in_1x1(&own, conv_params, quant_params, input_dims, input_data, filter_dims,
                                       filter_data, bias_dims, bias_data, NULL, output_dims, output_data);
    }
    const int32_t c = input_dims->c, m = output_dims->c;
    for (int32_t b = 0; b < input_dims->n; b++) {
        const int8_t *in = input_data + b * input_dims->h * input_dims->w * c;
        int8_t *out = output_data + b * output_dims->h * output_dims->w * m;
        for (int32_t y = 0; y < output_dims->h; y++) {
            conv_1x1_rows(in + y * conv_params->stride.h * input_dims->w * c, output_dims->w,
                          conv_params->stride.w * c, c, filter_data, m, bias_data, quant_params, conv_params,
                          out + y * output_dims->w * m);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* Scratch bytes arm_convolve_1x1_s8_fast needs: none, except where CMSIS-NN v7.0.0 is built by
   Arm Compiler 6 with the DSP extension (its int16 path: two columns of C_IN). */
int32_t arm_convolve_1x1_s8_fast_get_buffer_size(const cmsis_nn_dims *input_dims)
{
#if defined(ARM_MATH_DSP) && defined(__ARMCC_VERSION) && (__ARMCC_VERSION >= 6010050)
    return 2 * input_dims->c * (int32_t)sizeof(int16_t);
#else
    (void)input_dims;
    return 0;
#endif
}
