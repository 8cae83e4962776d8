/*
 * arm_softmax_s8 and arm_softmax_s8_s16 (cmsis_nn_shim): TFLite's int8 softmax over rows (see
 * shim_nnfunctions.h), output scale 1/256 and zero point -128, or int16 output, scale 1/65536 and
 * zero point -32768. CMSIS-NN has no DSP path for it; this is its
 * fixed-point algorithm (gemmlowp's exp on [-inf, 0] and 1 / (1 + x) by Newton-Raphson, each
 * product a saturating doubling high multiply) in plain C.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

#define ACCUM_BITS 12

/* a * b / 2^31 as CMSIS-NN's arm_nn_doubling_high_mult: nudge +2^30 (1 - 2^30 when the signs
   differ), then a truncating division; INT32_MIN * INT32_MIN saturates */
static inline int32_t mul_sat(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN) {
        return INT32_MAX;
    }
    const int64_t nudge = ((a < 0) != (b < 0)) ? 1 - (1LL << 30) : (1LL << 30);
    return (int32_t)(((int64_t)a * b + nudge) / (1LL << 31));
}

/* val * 2^exp, saturating */
static inline int32_t mul_pow2(int32_t val, int32_t exp)
{
    const int32_t thresh = (int32_t)((1U << (31 - exp)) - 1U);
    if (val > thresh) {
        return INT32_MAX;
    }
    if (val < -thresh) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)val << exp);
}

/* exp(val) for val <= 0 in Q5.26, result in Q0.31 */
static int32_t exp_on_negative_values(int32_t val)
{
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t mod_minus_quarter = (val & ((1 << 24) - 1)) - (1 << 24);
    const int32_t remainder = mod_minus_quarter - val;
    const int32_t x = (int32_t)((uint32_t)mod_minus_quarter << 5) + (1 << 28);
    const int32_t x2 = mul_sat(x, x);
    const int32_t inner = arm_nn_divide_by_power_of_two(mul_sat(x2, x2), 2) + mul_sat(x2, x);
    const int32_t poly = arm_nn_divide_by_power_of_two(mul_sat(inner, 715827883) + x2, 1);
    int32_t result = 1895147668 + mul_sat(1895147668, x + poly);
    for (int32_t i = 0; i < 7; i++) {
        if (remainder & (1 << (24 + i))) {
            result = mul_sat(result, barrel[i]);
        }
    }
    return val == 0 ? INT32_MAX : result;
}

/* 1 / (1 + x) for x in [0, 1) in Q0.31 (val >= 0 here) */
static int32_t one_over_one_plus_x(int32_t val)
{
    const int64_t sum = (int64_t)val + INT32_MAX;
    const int32_t half_denominator = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    int32_t x = 1515870810 + mul_sat(half_denominator, -1010580540);
    for (int32_t i = 0; i < 3; i++) {
        x += mul_pow2(mul_sat(x, (1 << 29) - mul_sat(half_denominator, x)), 2);
    }
    return mul_pow2(x, 1);
}

static inline __attribute__((always_inline)) void store(int8_t *out8, int16_t *out16, int32_t i, int32_t v)
{
    if (out8) {
        out8[i] = (int8_t)v;
    } else {
        out16[i] = (int16_t)v;
    }
}

/* The rows' softmax into out8 (int8: -128 + 256 x) or, out8 NULL, out16 (int16: -32768 + 65536 x):
   the same exponentials, a shift 8 smaller for int16 (TFLite's exponent num_bits_over_unit + 31 -
   the output's bits). Inlined into each caller with its output constant, the int8 one's code is
   what it was before the int16 output. */
static inline __attribute__((always_inline)) void softmax_rows(const int8_t *input, int32_t num_rows,
                                                               int32_t row_size, int32_t mult, int32_t shift,
                                                               int32_t diff_min, int8_t *out8, int16_t *out16)
{
    const uint32_t scale = 1U << shift; /* diff * scale wraps in int32, as on the core */
    const int32_t lo = out8 ? -128 : NN_Q15_MIN, hi = out8 ? 127 : NN_Q15_MAX;
    for (int32_t r = 0; r < num_rows; r++) {
        int32_t max = input[0];
        for (int32_t i = 1; i < row_size; i++) {
            max = MAX(max, (int32_t)input[i]);
        }
        int32_t sum = 0;
        for (int32_t i = 0; i < row_size; i++) {
            const int32_t diff = input[i] - max;
            if (diff >= diff_min) {
                sum += arm_nn_divide_by_power_of_two(exp_on_negative_values(mul_sat((int32_t)((uint32_t)diff * scale), mult)), ACCUM_BITS);
            }
        }
        /* the row's max contributes exp(0) / 2^12 > 0, so sum > 0 and CLZ(sum) < 32 */
        const int32_t headroom = __builtin_clz((uint32_t)sum);
        const int32_t shifted_scale = one_over_one_plus_x((int32_t)(((uint32_t)sum << headroom) - 0x80000000U));
        const int32_t bits_over_unit = ACCUM_BITS - headroom + (out8 ? 23 : 15);
        for (int32_t i = 0; i < row_size; i++) {
            const int32_t diff = input[i] - max;
            if (diff >= diff_min) {
                const int32_t e = exp_on_negative_values(mul_sat((int32_t)((uint32_t)diff * scale), mult));
                const int32_t res = arm_nn_divide_by_power_of_two(mul_sat(shifted_scale, e), bits_over_unit) + lo;
                store(out8, out16, i, CLAMP(res, hi, lo));
            } else {
                store(out8, out16, i, lo);
            }
        }
        input += row_size;
        if (out8) {
            out8 += row_size;
        } else {
            out16 += row_size;
        }
    }
}

void arm_softmax_s8(const int8_t *input,
                    const int32_t num_rows,
                    const int32_t row_size,
                    const int32_t mult,
                    const int32_t shift,
                    const int32_t diff_min,
                    int8_t *output)
{
    softmax_rows(input, num_rows, row_size, mult, shift, diff_min, output, NULL);
}

void arm_softmax_s8_s16(const int8_t *input,
                        const int32_t num_rows,
                        const int32_t row_size,
                        const int32_t mult,
                        const int32_t shift,
                        const int32_t diff_min,
                        int16_t *output)
{
    softmax_rows(input, num_rows, row_size, mult, shift, diff_min, NULL, output);
}
