/*
 * arm_softmax_s16 (cmsis_nn_shim): TFLite's int16 softmax over rows (see shim_nnfunctions.h),
 * input and output zero point 0, output scale 1/32768. Two 513-entry tables interpolated over
 * their low 7 bits: exp(x) on [-10, 0] and 1 / (1 + x) on [0, 1] (TFLite's LUTPopulate fills
 * them; the caller passes them).
 *
 * Bit-exact with TFLite Micro's reference SoftmaxInt16, including at the reciprocal table's top
 * edge: for a row sum of 2^18 - 1 (or 2^(32-h) - j, j <= 2^(14-h), headroom h), rounding the
 * normalized sum to 15 fraction bits reaches 2^31. TFLite rounds in int64 and saturates the index
 * to 32767 (a reciprocal of 1/2); CMSIS-NN v7.0.0 rounds in int32, which wraps, and its int16
 * cast lands on -32768 (a reciprocal of 1): every output of that row doubled.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* value in [-32768, 32767] looked up: the high 9 bits index, the low 7 interpolate */
static inline int32_t lut_lookup(int32_t value, const int16_t *lut)
{
    const int32_t index = 256 + (value >> 7);
    const int32_t offset = value & 0x7f;
    const int32_t base = lut[index];
    const int32_t slope = lut[index + 1] - base;
    return (int16_t)(base + ((slope * offset + 64) >> 7));
}

arm_cmsis_nn_status arm_softmax_s16(const int16_t *input,
                                    const int32_t num_rows,
                                    const int32_t row_size,
                                    const int32_t mult,
                                    const int32_t shift,
                                    const cmsis_nn_softmax_lut_s16 *softmax_params,
                                    int16_t *output)
{
    if (softmax_params->exp_lut == NULL || softmax_params->one_by_one_lut == NULL) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    for (int32_t row = 0; row < num_rows; row++) {
        int32_t max = input[0];
        for (int32_t col = 1; col < row_size; col++) {
            max = MAX(max, input[col]);
        }
        /* the exponentials wait in the output row until the reciprocal of their sum is known */
        int32_t sum = 0;
        for (int32_t col = 0; col < row_size; col++) {
            const int32_t scaled = arm_nn_requantize(input[col] - max, mult, shift) + NN_Q15_MAX;
            const int32_t e = lut_lookup(MIN(MAX(scaled, NN_Q15_MIN), NN_Q15_MAX), softmax_params->exp_lut);
            output[col] = (int16_t)e;
            sum += e;
        }
        const int32_t headroom = __builtin_clz((uint32_t)sum);
        const int32_t shifted = (int32_t)((((int64_t)sum << (headroom - 1)) + (1 << 13)) >> 14);
        /* 1 / (1 + x) for x = sum - 1 in [0, 1): recentred from [0, 65535] to int16 */
        const int32_t x = MIN(MAX(shifted - (1 << 15) - (1 << 16), NN_Q15_MIN), NN_Q15_MAX);
        const int32_t reciprocal = lut_lookup(x, softmax_params->one_by_one_lut);
        const int32_t right_shift = 31 - headroom;
        for (int32_t col = 0; col < row_size; col++) {
            const int32_t r = (output[col] * reciprocal + (1 << (right_shift - 1))) >> right_shift;
            output[col] = (int16_t)MIN(MAX(r, 0), NN_Q15_MAX);
        }
        input += row_size;
        output += row_size;
    }
    return ARM_CMSIS_NN_SUCCESS;
}
