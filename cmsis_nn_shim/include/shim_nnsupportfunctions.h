/*
 * shim_nnsupportfunctions.h (cmsis_nn_shim) -- the CMSIS-NN support API the shim implements:
 * the requantization helpers (exactly CMSIS-NN's arithmetic, including its rounding), the
 * packed load helpers, and the s8 matrix kernels. Signatures as in CMSIS-NN v6.0.0.
 */
#ifndef SHIM_NNSUPPORTFUNCTIONS_H
#define SHIM_NNSUPPORTFUNCTIONS_H

#include "shim_nn_math_types.h"
#include "shim_nn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LEFT_SHIFT(_shift) (_shift > 0 ? _shift : 0)
#define RIGHT_SHIFT(_shift) (_shift > 0 ? 0 : -_shift)
#define MAX(A, B) ((A) > (B) ? (A) : (B))
#define MIN(A, B) ((A) < (B) ? (A) : (B))
#define CLAMP(x, h, l) MAX(MIN((x), (h)), (l))

/* ------------------------------------------------------------------ requantization */

/*
 * High word of 2 * m1 * m2, rounded by adding 2^30 before the shift (ties toward +inf); no
 * saturation: m1 == m2 == INT32_MIN wraps to INT32_MIN. (This is CMSIS-NN's variant; TFLite's
 * reference rounds negative ties away from zero instead.)
 */
__STATIC_FORCEINLINE int32_t arm_nn_doubling_high_mult_no_sat(const int32_t m1, const int32_t m2)
{
    const int64_t prod = (int64_t)m1 * m2 + (int64_t)(1L << 30);
    return (int32_t)(uint32_t)(uint64_t)(prod >> 31);
}

/* dividend / 2^exponent (exponent 0..31), rounded to nearest, ties away from zero. */
__STATIC_FORCEINLINE int32_t arm_nn_divide_by_power_of_two(const int32_t dividend, const int32_t exponent)
{
    const int32_t mask = (int32_t)((1UL << exponent) - 1UL);
    const int32_t remainder = dividend & mask;
    int32_t result = dividend >> exponent;
    int32_t threshold = mask >> 1;
    if (result < 0) {
        threshold++;
    }
    if (remainder > threshold) {
        result++;
    }
    return result;
}

/*
 * val * multiplier / 2^(31 - shift) the CMSIS-NN way.
 * Default: a left shift by max(shift, 0) (wrapping), the doubling high multiply above, then
 * a rounding divide by 2^max(-shift, 0). With CMSIS_NN_USE_SINGLE_ROUNDING: one 64-bit
 * product, rounded once (ties toward +inf).
 * multiplier in [INT32_MIN + 1, INT32_MAX], shift in [-31, 30].
 */
__STATIC_FORCEINLINE int32_t arm_nn_requantize(const int32_t val, const int32_t multiplier, const int32_t shift)
{
#ifdef CMSIS_NN_USE_SINGLE_ROUNDING
    const int64_t total_shift = 31 - shift;
    const int64_t product = (int64_t)val * multiplier;
    const int32_t result = (int32_t)(product >> (total_shift - 1));
    return (int32_t)((uint32_t)result + 1U) >> 1;
#else
    const int32_t shifted = (int32_t)((uint32_t)val << LEFT_SHIFT(shift));
    return arm_nn_divide_by_power_of_two(arm_nn_doubling_high_mult_no_sat(shifted, multiplier),
                                         RIGHT_SHIFT(shift));
#endif
}

/* ------------------------------------------------------------------ int16 activations (16x8) */

/*
 * The Q15 multiplier of the int16-activation layers' int64 requantization: a Q31 multiplier
 * rounded to its top 16 bits (halves up), 0x7FFF from 0x7FFF0000 up (from 0x7FFF8000 the
 * rounding would give 0x8000, beyond Q15, and overflow the int32 sum). CMSIS-NN v7.0.0's macro,
 * TFLite's reduction.
 */
#define REDUCE_MULTIPLIER(_mult) (((_mult) < 0x7FFF0000) ? (((_mult) + (1 << 15)) >> 16) : 0x7FFF)

/*
 * val * reduced_multiplier / 2^(15 - shift), rounded half up (ties toward +inf): the
 * int16-activation layers' requantization, TFLite's int64 MultiplyByQuantizedMultiplier,
 * (val * reduced_multiplier + 2^(14 - shift)) >> (15 - shift) in 64 bits, saturated to int32 (the
 * layer then clamps to its activation range). CMSIS-NN v7.0.0 takes it in two steps, the product
 * shifted right by 14 - shift into 32 bits, then (r + 1) >> 1: the same value while the result is
 * within [-2^30, 2^30), beyond which its intermediate (twice the result) wraps -- an output more
 * than 2^15 times past int16's range that v7.0.0 can turn into a wrong in-range value. The shim
 * keeps TFLite's value there, as JAX's blocks (specializer/quant/fixedpoint.py) do.
 * reduced_multiplier from REDUCE_MULTIPLIER(), shift in [-48, 14].
 */
__STATIC_FORCEINLINE int32_t arm_nn_requantize_s64(const int64_t val,
                                                   const int32_t reduced_multiplier,
                                                   const int32_t shift)
{
    const int32_t total = 15 - shift;
    if (val == (int32_t)val && total < 32) {
        /* the usual case, a sum within int32 and a shift below 32: one 32 x 32 -> 64 product and
           the window of 32 bits above bit `total` taken with 32-bit shifts (a 64-bit shift by a
           run-time amount is a dozen instructions and two branches on Cortex-M4) */
        const int64_t p = (int64_t)(int32_t)val * reduced_multiplier + ((int64_t)1 << (total - 1));
        const int32_t hi = (int32_t)(p >> 32);
        const uint32_t lo = ((uint32_t)p >> total) | ((uint32_t)hi << (32 - total));
        if ((hi >> total) != ((int32_t)lo >> 31)) { /* past int32 */
            return hi < 0 ? INT32_MIN : INT32_MAX;
        }
        return (int32_t)lo;
    }
    const int64_t result = (val * reduced_multiplier + ((int64_t)1 << (14 - shift))) >> (15 - shift);
    return result > INT32_MAX ? INT32_MAX : result < INT32_MIN ? INT32_MIN : (int32_t)result;
}

/* ------------------------------------------------------------------ packed loads */

/* Four s8 values as one word (unaligned allowed); the _ia forms advance the pointer. */
__STATIC_FORCEINLINE int32_t arm_nn_read_s8x4(const int8_t *in_s8)
{
    int32_t v;
    memcpy(&v, in_s8, 4);
    return v;
}
__STATIC_FORCEINLINE int32_t arm_nn_read_s8x4_ia(const int8_t **in_s8)
{
    int32_t v;
    memcpy(&v, *in_s8, 4);
    *in_s8 += 4;
    return v;
}
/* An offset in both halfwords, as SXTAB16 adds it to bytes 0/2 (or 1/3) of a word. */
__STATIC_FORCEINLINE uint32_t shim_offset_x2(int32_t offset)
{
    return ((uint32_t)offset & 0xFFFFU) | ((uint32_t)offset << 16);
}
/* acc + a . (b + b_offset) over n int8 values (the recurrent layers' products): with the DSP
   extension four at a time, b widened into halfword pairs with the offset added (SXTAB16), a
   into pairs (SXTB16), two SMLADs. */
__STATIC_FORCEINLINE int32_t shim_dot_s8(const int8_t *a, const int8_t *b, int32_t n, int32_t b_offset, int32_t acc)
{
    uint32_t sum = (uint32_t)acc;
    int32_t p = 0;
#if defined(ARM_MATH_DSP)
    const uint32_t off2 = __PKHBT((uint32_t)(uint16_t)b_offset, (uint32_t)(uint16_t)b_offset, 16);
    for (; p + 4 <= n; p += 4)
    {
        const uint32_t av = (uint32_t)arm_nn_read_s8x4(a + p), bv = (uint32_t)arm_nn_read_s8x4(b + p);
        sum = __SMLAD(__SXTB16(av), __SXTAB16(off2, bv), sum);
        sum = __SMLAD(__SXTB16_RORn(av, 8), __SXTAB16_RORn(off2, bv, 8), sum);
    }
#endif
    for (; p < n; p++)
    {
        sum += (uint32_t)(a[p] * (b[p] + b_offset));
    }
    return (int32_t)sum;
}

/* Two s16 values as one word. */
__STATIC_FORCEINLINE int32_t arm_nn_read_q15x2(const int16_t *in_q15)
{
    int32_t v;
    memcpy(&v, in_q15, 4);
    return v;
}
__STATIC_FORCEINLINE int32_t arm_nn_read_q15x2_ia(const int16_t **in_q15)
{
    int32_t v;
    memcpy(&v, *in_q15, 4);
    *in_q15 += 2;
    return v;
}

/* ------------------------------------------------------------------ int4 weights */

/* An s4 layer's output: the bias (if any) added, requantized, offset and clamped to int8. */
__STATIC_FORCEINLINE int8_t shim_s4_output(int32_t acc, const int32_t *bias, int32_t o, int32_t multiplier,
                                           int32_t shift, int32_t out_offset, cmsis_nn_activation act)
{
    acc += bias ? bias[o] : 0;
    acc = arm_nn_requantize(acc, multiplier, shift) + out_offset;
    acc = MAX(acc, act.min);
    return (int8_t)MIN(acc, act.max);
}

/* Weight i of an int4 filter packed two a byte, the first in the low nibble (the s4 functions). */
__STATIC_FORCEINLINE int32_t shim_s4_weight(const int8_t *packed, const int32_t i)
{
    const int32_t b = packed[i >> 1];
    return (i & 1) ? (b >> 4) : ((int32_t)((uint32_t)b << 28) >> 28);
}

/*
 * Eight int4 weights at once: a word w of packed weights w0..w7 splits into its low nibbles
 * (w << 4) & 0xF0F0F0F0 = bytes (16 w0, 16 w2, 16 w4, 16 w6) and its high ones w & 0xF0F0F0F0 =
 * (16 w1, 16 w3, 16 w5, 16 w7); SXTB16 and SXTB16 ROR 8 of each give the halfword pairs
 * (w0, w4) (w2, w6) (w1, w5) (w3, w7), times 16. Inputs stored in that order (shim_s4_slot) meet
 * them in four SMLADs: 16 times the dot, exact, divided by 16 at the end (an arithmetic shift:
 * every term is a multiple of 16), as long as 16 x the dot fits 32 bits (depth <= 65536).
 */
__STATIC_FORCEINLINE int32_t shim_s4_slot(const int32_t k)
{
    return (k & ~7) | ((k & 1) << 2) | (k & 2) | ((k >> 2) & 1);
}

__STATIC_FORCEINLINE uint32_t shim_s4_dot8(const uint32_t w, const int16_t *c, uint32_t acc)
{
    const uint32_t lo = (w << 4) & 0xF0F0F0F0u;
    const uint32_t hi = w & 0xF0F0F0F0u;
#if defined(ARM_MATH_DSP)
    acc = __SMLAD(__SXTB16(lo), (uint32_t)arm_nn_read_q15x2(c), acc);
    acc = __SMLAD(__SXTB16_RORn(lo, 8), (uint32_t)arm_nn_read_q15x2(c + 2), acc);
    acc = __SMLAD(__SXTB16(hi), (uint32_t)arm_nn_read_q15x2(c + 4), acc);
    acc = __SMLAD(__SXTB16_RORn(hi, 8), (uint32_t)arm_nn_read_q15x2(c + 6), acc);
#else /* the same sums in plain C: byte k of lo / hi is weight 2k / 2k + 1, times 16 */
    for (int32_t k = 0; k < 4; k++) {
        acc += (uint32_t)((int8_t)(lo >> (8 * k)) * c[shim_s4_slot(2 * k)]);
        acc += (uint32_t)((int8_t)(hi >> (8 * k)) * c[shim_s4_slot(2 * k + 1)]);
    }
#endif
    return acc;
}


/* ------------------------------------------------------------------ matrix kernels */

/*
 * s8 x s8 -> s32 matrix product, LHS not transposed, RHS transposed, ACCUMULATING into dst
 * (clear dst first for a plain product):
 *
 *   dst[(i * rhs_cols + j) * dst_idx_offset] += sum_{p < rhs_rows} (lhs[i][p] + lhs_offset) * rhs[j][p]
 *
 * for i < lhs_rows, j < rhs_cols; lhs is [lhs_rows][rhs_rows], rhs is [rhs_cols][rhs_rows]
 * (so rhs_rows is the depth, the number of LHS columns). Sums wrap modulo 2^32. With the DSP
 * extension lhs + lhs_offset is formed in 16 bits, as in CMSIS-NN (lhs_offset in [-127, 128]
 * keeps it exact). Returns ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_nn_mat_mult_nt_t_s8_s32(const int8_t *lhs,
                                                const int8_t *rhs,
                                                int32_t *dst,
                                                const int32_t lhs_rows,
                                                const int32_t rhs_rows,
                                                const int32_t rhs_cols,
                                                const int32_t lhs_offset,
                                                const int32_t dst_idx_offset);

/*
 * s8 vector times transposed matrix with requantization (the fully connected kernel):
 *
 *   dst[r * address_offset] = clamp(requantize(bias[r] + sum_{p < rhs_cols} (lhs[p] + lhs_offset)
 *                                                 * (rhs[r][p] + rhs_offset), mult, shift)
 *                                   + dst_offset, activation_min, activation_max)
 *
 * for r < rhs_rows; rhs is [rhs_rows][rhs_cols]; bias may be NULL; kernel_sum (MVE only) is
 * ignored. Returns ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_nn_vec_mat_mult_t_s8(const int8_t *lhs,
                                             const int8_t *rhs,
                                             const int32_t *kernel_sum,
                                             const int32_t *bias,
                                             int8_t *dst,
                                             const int32_t lhs_offset,
                                             const int32_t dst_offset,
                                             const int32_t dst_multiplier,
                                             const int32_t dst_shift,
                                             const int32_t rhs_cols,
                                             const int32_t rhs_rows,
                                             const int32_t activation_min,
                                             const int32_t activation_max,
                                             const int32_t address_offset,
                                             const int32_t rhs_offset);

/* ------------------------------------------------------------------ SVDF */

/* An SVDF step's sizes from its arguments (CMSIS-NN's dims fields: n and h). */
typedef struct
{
    int32_t batches, input_size, filters, memory, rank, units;
} shim_svdf_sizes;

/* 0 when a scratch buffer is NULL or the filters are not a multiple of the rank (the functions
   then return ARM_CMSIS_NN_ARG_ERROR), else 1 with *z filled. */
static inline int shim_svdf_sizes_of(const cmsis_nn_context *input_ctx,
                                     const cmsis_nn_context *output_ctx,
                                     const cmsis_nn_svdf_params *params,
                                     const cmsis_nn_dims *input_dims,
                                     const cmsis_nn_dims *weights_feature_dims,
                                     const cmsis_nn_dims *weights_time_dims,
                                     shim_svdf_sizes *z)
{
    z->batches = input_dims->n;
    z->input_size = input_dims->h;
    z->filters = weights_feature_dims->n;
    z->memory = weights_time_dims->h;
    z->rank = params->rank;
    if (input_ctx->buf == NULL || output_ctx->buf == NULL || z->rank < 1 || z->filters % z->rank != 0)
    {
        return 0;
    }
    z->units = z->filters / z->rank;
    return 1;
}

/*
 * The end of an SVDF step, the same for both state types: each unit's sum (bias plus its rank
 * filters' time sums, into unit_sums), requantized by quant, offset and clamped into out.
 * Sums wrap modulo 2^32, as on the core.
 */
static inline void shim_svdf_units(const int32_t *time_sums,
                                   const int32_t *bias,
                                   int32_t units,
                                   int32_t rank,
                                   const cmsis_nn_svdf_params *params,
                                   const cmsis_nn_per_tensor_quant_params *quant,
                                   int32_t *unit_sums,
                                   int8_t *out)
{
    for (int32_t u = 0; u < units; u++)
    {
        uint32_t sum = bias != NULL ? (uint32_t)bias[u] : 0;
        for (int32_t r = 0; r < rank; r++)
        {
            sum += (uint32_t)time_sums[u * rank + r];
        }
        unit_sums[u] = (int32_t)sum;
    }
    for (int32_t u = 0; u < units; u++)
    {
        int32_t v = arm_nn_requantize(unit_sums[u], quant->multiplier, quant->shift) + params->output_offset;
        v = MAX(v, params->output_activation.min);
        v = MIN(v, params->output_activation.max);
        out[u] = (int8_t)v;
    }
}

/* TFLite's int16 sigmoid or tanh of one value (arm_nn_activation_s16.c): x scaled by 3 <<
   left_shift (or by 3 with a rounding right shift by -left_shift) to units of 1/(3 * 4096), Q0.15
   out. arm_nn_activation_s16 and the LSTM's gates use it. */
int16_t shim_activation_s16(int16_t x, int32_t left_shift, arm_nn_activation_type type);

#ifdef __cplusplus
}
#endif

#endif /* SHIM_NNSUPPORTFUNCTIONS_H */
