/*
 * arm_elementwise_mul_s16 (cmsis_nn_shim): TFLite's int16 multiply of two tensors of one shape
 * (the 16x8 scheme; see shim_nnfunctions.h).
 *
 * The offsets are 0 (symmetric int16), so the product of two int16 values fits int32 (at most
 * 2^30) and is requantized as the s8 form's. With the DSP extension two elements go together:
 * SMULBB / SMULTT multiply the halves of one word of each input, and the two results leave as
 * one word.
 */
#include <string.h>

#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

static inline int16_t mul_out(int32_t prod, int32_t out_mult, int32_t out_shift, int32_t act_min, int32_t act_max)
{
    int32_t v = arm_nn_requantize(prod, out_mult, out_shift);
    v = MAX(v, act_min);
    v = MIN(v, act_max);
    return (int16_t)v;
}

arm_cmsis_nn_status arm_elementwise_mul_s16(const int16_t *input_1_vect,
                                            const int16_t *input_2_vect,
                                            const int32_t input_1_offset,
                                            const int32_t input_2_offset,
                                            int16_t *output,
                                            const int32_t out_offset,
                                            const int32_t out_mult,
                                            const int32_t out_shift,
                                            const int32_t out_activation_min,
                                            const int32_t out_activation_max,
                                            const int32_t block_size)
{
    (void)input_1_offset; /* 0 in the 16x8 scheme, as CMSIS-NN documents: not used */
    (void)input_2_offset;
    (void)out_offset;
    int32_t n = block_size;
#if defined(ARM_MATH_DSP)
    for (; n >= 2; n -= 2) {
        int32_t a, b;
        memcpy(&a, input_1_vect, 4);
        memcpy(&b, input_2_vect, 4);
        input_1_vect += 2;
        input_2_vect += 2;
        const uint16_t lo = (uint16_t)mul_out(__SMULBB(a, b), out_mult, out_shift, out_activation_min,
                                              out_activation_max);
        const uint16_t hi = (uint16_t)mul_out(__SMULTT(a, b), out_mult, out_shift, out_activation_min,
                                              out_activation_max);
        const uint32_t word = lo | ((uint32_t)hi << 16);
        memcpy(output, &word, 4);
        output += 2;
    }
#endif
    for (; n > 0; n--) {
        const int32_t prod = (int32_t)*input_1_vect++ * (int32_t)*input_2_vect++;
        *output++ = mul_out(prod, out_mult, out_shift, out_activation_min, out_activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
