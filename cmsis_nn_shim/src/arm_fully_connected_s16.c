/*
 * arm_fully_connected_s16 (cmsis_nn_shim): TFLite 16x8 fully connected layer (int16 input and
 * output, int8 weights, int64 bias, per-tensor requantization; see shim_nnfunctions.h).
 *
 * Each output is the exact int64 sum of its row's products plus the bias, requantized by
 * arm_nn_requantize_s64. With the DSP extension three rows go together (four spill
 * Cortex-M4's 14 registers), four columns a trip: the input words (x0, x1) (x2, x3) are
 * repacked once into (x0, x2) and (x1, x3) (PKHBT, PKHTB), which meet each row's
 * SXTB16-widened filter bytes (w0, w2) and (w1, w3) in two SMLADs; the int32 sums take at
 * most S16_BLOCK columns at a time (exact: |int16 * int8| <= 2^22, 508 * 2^22 < 2^31) and go
 * on in int64. The last (rows mod 3) rows go one by one, the last (cols mod 4) columns and
 * the build without the DSP extension in plain C, int64.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

#define S16_BLOCK 508 /* columns per int32 sum, a multiple of 4 */

static inline __attribute__((always_inline)) int16_t fc_out(int64_t acc, const int64_t *bias, int32_t r, int32_t reduced, int32_t shift,
                             int32_t act_min, int32_t act_max)
{
    if (bias) {
        acc += bias[r];
    }
    int32_t v = arm_nn_requantize_s64(acc, reduced, shift);
    v = MAX(v, act_min);
    v = MIN(v, act_max);
    return (int16_t)v;
}

/* row . x over n columns in plain C */
static inline int64_t fc_dot(const int8_t *row, const int16_t *x, int32_t n)
{
    int64_t acc = 0;
    for (int32_t p = 0; p < n; p++) {
        acc += (int64_t)row[p] * x[p]; /* SMLAL */
    }
    return acc;
}

#if defined(ARM_MATH_DSP)
/* sums[0..2] = rows f0, f0 + cols, f0 + 2 * cols . x (a function of its own: the loop's
   13 live registers fit Cortex-M4's 14 only without the caller's values around) */
static __attribute__((noinline)) void fc_dot3(const int8_t *f0, const int16_t *x, int32_t cols, int64_t *sums)
{
    const int8_t *f1 = f0 + cols, *f2 = f1 + cols;
    int64_t s0 = 0, s1 = 0, s2 = 0;
    for (int32_t left = cols & ~3; left > 0; left -= S16_BLOCK) {
        uint32_t a0 = 0, a1 = 0, a2 = 0;
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
        for (int32_t n = MIN(left, S16_BLOCK) >> 2; n > 0; n--) {
            const uint32_t lo = (uint32_t)arm_nn_read_q15x2_ia(&x); /* x0 x1 */
            const uint32_t hi = (uint32_t)arm_nn_read_q15x2_ia(&x); /* x2 x3 */
            const uint32_t even = __PKHBT(lo, hi, 16);              /* x0 x2 */
            const uint32_t odd = __PKHTB(hi, lo, 16);               /* x1 x3 */
            uint32_t w = (uint32_t)arm_nn_read_s8x4_ia(&f0);        /* w0 w1 w2 w3 */
            a0 = __SMLAD(__SXTB16(w), even, a0);                    /* w0 x0 + w2 x2 */
            a0 = __SMLAD(__SXTB16_RORn(w, 8), odd, a0);             /* w1 x1 + w3 x3 */
            w = (uint32_t)arm_nn_read_s8x4_ia(&f1);
            a1 = __SMLAD(__SXTB16(w), even, a1);
            a1 = __SMLAD(__SXTB16_RORn(w, 8), odd, a1);
            w = (uint32_t)arm_nn_read_s8x4_ia(&f2);
            a2 = __SMLAD(__SXTB16(w), even, a2);
            a2 = __SMLAD(__SXTB16_RORn(w, 8), odd, a2);
        }
        s0 += (int32_t)a0;
        s1 += (int32_t)a1;
        s2 += (int32_t)a2;
    }
    const int32_t tail = cols & 3;
    sums[0] = s0 + fc_dot(f0, x, tail);
    sums[1] = s1 + fc_dot(f1, x, tail);
    sums[2] = s2 + fc_dot(f2, x, tail);
}

/* one row . x */
static int64_t fc_dot1(const int8_t *f0, const int16_t *x, int32_t cols)
{
    int64_t s0 = 0;
    for (int32_t left = cols & ~3; left > 0; left -= S16_BLOCK) {
        uint32_t a0 = 0;
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
        for (int32_t n = MIN(left, S16_BLOCK) >> 2; n > 0; n--) {
            const uint32_t lo = (uint32_t)arm_nn_read_q15x2_ia(&x);
            const uint32_t hi = (uint32_t)arm_nn_read_q15x2_ia(&x);
            const uint32_t w = (uint32_t)arm_nn_read_s8x4_ia(&f0);
            a0 = __SMLAD(__SXTB16(w), __PKHBT(lo, hi, 16), a0);
            a0 = __SMLAD(__SXTB16_RORn(w, 8), __PKHTB(hi, lo, 16), a0);
        }
        s0 += (int32_t)a0;
    }
    return s0 + fc_dot(f0, x, cols & 3);
}
#endif

arm_cmsis_nn_status arm_fully_connected_s16(const cmsis_nn_context *ctx,
                                            const cmsis_nn_fc_params *fc_params,
                                            const cmsis_nn_per_tensor_quant_params *quant_params,
                                            const cmsis_nn_dims *input_dims,
                                            const int16_t *input_data,
                                            const cmsis_nn_dims *filter_dims,
                                            const int8_t *filter_data,
                                            const cmsis_nn_dims *bias_dims,
                                            const int64_t *bias_data,
                                            const cmsis_nn_dims *output_dims,
                                            int16_t *output_data)
{
    (void)ctx;
    (void)bias_dims;
    const int32_t cols = filter_dims->n;
    const int32_t rows = output_dims->c;
    const int32_t reduced = REDUCE_MULTIPLIER(quant_params->multiplier);
    const int32_t shift = quant_params->shift;
    const int32_t act_min = fc_params->activation.min, act_max = fc_params->activation.max;
    for (int32_t b = 0; b < input_dims->n; b++) {
        const int16_t *x = input_data + b * cols;
        int16_t *out = output_data + b * rows;
        int32_t r = 0;
#if defined(ARM_MATH_DSP)
        for (; r + 3 <= rows; r += 3) {
            int64_t sums[3];
            fc_dot3(filter_data + r * cols, x, cols, sums);
            for (int32_t i = 0; i < 3; i++) {
                out[r + i] = fc_out(sums[i], bias_data, r + i, reduced, shift, act_min, act_max);
            }
        }
        for (; r < rows; r++) {
            out[r] = fc_out(fc_dot1(filter_data + r * cols, x, cols), bias_data, r, reduced, shift, act_min, act_max);
        }
#else
        for (; r < rows; r++) {
            out[r] = fc_out(fc_dot(filter_data + r * cols, x, cols), bias_data, r, reduced, shift, act_min, act_max);
        }
#endif
    }
    return ARM_CMSIS_NN_SUCCESS;
}

int32_t arm_fully_connected_s16_get_buffer_size(const cmsis_nn_dims *filter_dims)
{
    (void)filter_dims;
    return 0;
}
