/*
 * arm_elementwise_mul_s8 (cmsis_nn_shim): TFLite int8 multiply of two tensors of one shape (see
 * shim_nnfunctions.h).
 *
 * With the DSP extension four elements go together: SXTAB16 adds the packed input offset to
 * bytes 0/2 and 1/3 of each input word (x + offset is within [-255, 255], exact in 16 bits),
 * SMULBB / SMULTT multiply the halves, and the four results leave as one word.
 */
#include <string.h>

#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

static inline int8_t mul_out(int32_t prod, int32_t out_offset, int32_t out_mult, int32_t out_shift, int32_t act_min,
                             int32_t act_max)
{
    int32_t v = arm_nn_requantize(prod, out_mult, out_shift) + out_offset;
    v = MAX(v, act_min);
    v = MIN(v, act_max);
    return (int8_t)v;
}

arm_cmsis_nn_status arm_elementwise_mul_s8(const int8_t *input_1_vect,
                                           const int8_t *input_2_vect,
                                           const int32_t input_1_offset,
                                           const int32_t input_2_offset,
                                           int8_t *output,
                                           const int32_t out_offset,
                                           const int32_t out_mult,
                                           const int32_t out_shift,
                                           const int32_t out_activation_min,
                                           const int32_t out_activation_max,
                                           const int32_t block_size)
{
    int32_t n = block_size;
#if defined(ARM_MATH_DSP)
    const uint32_t off1 = shim_offset_x2(input_1_offset);
    const uint32_t off2 = shim_offset_x2(input_2_offset);
    for (; n >= 4; n -= 4) {
        const uint32_t a = (uint32_t)arm_nn_read_s8x4_ia(&input_1_vect);
        const uint32_t b = (uint32_t)arm_nn_read_s8x4_ia(&input_2_vect);
        const uint32_t a02 = __SXTAB16(off1, a), a13 = __SXTAB16_RORn(off1, a, 8);
        const uint32_t b02 = __SXTAB16(off2, b), b13 = __SXTAB16_RORn(off2, b, 8);
        const int32_t p0 = (int16_t)a02 * (int16_t)b02, p2 = (int16_t)(a02 >> 16) * (int16_t)(b02 >> 16);
        const int32_t p1 = (int16_t)a13 * (int16_t)b13, p3 = (int16_t)(a13 >> 16) * (int16_t)(b13 >> 16);
        const uint8_t r0 = (uint8_t)mul_out(p0, out_offset, out_mult, out_shift, out_activation_min,
                                            out_activation_max);
        const uint8_t r1 = (uint8_t)mul_out(p1, out_offset, out_mult, out_shift, out_activation_min,
                                            out_activation_max);
        const uint8_t r2 = (uint8_t)mul_out(p2, out_offset, out_mult, out_shift, out_activation_min,
                                            out_activation_max);
        const uint8_t r3 = (uint8_t)mul_out(p3, out_offset, out_mult, out_shift, out_activation_min,
                                            out_activation_max);
        const uint32_t word = r0 | ((uint32_t)r1 << 8) | ((uint32_t)r2 << 16) | ((uint32_t)r3 << 24);
        memcpy(output, &word, 4);
        output += 4;
    }
#endif
    for (; n > 0; n--) {
        const int32_t prod = (*input_1_vect++ + input_1_offset) * (*input_2_vect++ + input_2_offset);
        *output++ = mul_out(prod, out_offset, out_mult, out_shift, out_activation_min, out_activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
