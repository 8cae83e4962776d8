/*
 * arm_elementwise_add_s8 (cmsis_nn_shim): TFLite int8 add of two tensors of one shape (see
 * shim_nnfunctions.h).
 *
 * With the DSP extension four elements go together: SXTAB16 adds the packed input offset to
 * bytes 0/2 and 1/3 of each input word (x + offset is within [-255, 255], exact in 16 bits),
 * and the four results leave as one word. Each element is then shifted left and requantized
 * as in the plain path (sign-correct for every left_shift; CMSIS-NN's own DSP path masks the
 * 16-bit lane first, which agrees for the left_shift >= 16 TFLite uses).
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

typedef struct
{
    int32_t off1, mult1, shift1, off2, mult2, shift2, left_shift, out_off, out_mult, out_shift, act_min, act_max;
} add_params;

/* a and b already carry their input offsets */
static inline int8_t add_one(int32_t a, int32_t b, const add_params *p)
{
    a = arm_nn_requantize((int32_t)((uint32_t)a << p->left_shift), p->mult1, p->shift1);
    b = arm_nn_requantize((int32_t)((uint32_t)b << p->left_shift), p->mult2, p->shift2);
    int32_t sum = arm_nn_requantize(a + b, p->out_mult, p->out_shift) + p->out_off;
    sum = MAX(sum, p->act_min);
    sum = MIN(sum, p->act_max);
    return (int8_t)sum;
}

arm_cmsis_nn_status arm_elementwise_add_s8(const int8_t *input_1_vect,
                                           const int8_t *input_2_vect,
                                           const int32_t input_1_offset,
                                           const int32_t input_1_mult,
                                           const int32_t input_1_shift,
                                           const int32_t input_2_offset,
                                           const int32_t input_2_mult,
                                           const int32_t input_2_shift,
                                           const int32_t left_shift,
                                           int8_t *output,
                                           const int32_t out_offset,
                                           const int32_t out_mult,
                                           const int32_t out_shift,
                                           const int32_t out_activation_min,
                                           const int32_t out_activation_max,
                                           const int32_t block_size)
{
    const add_params p = {input_1_offset, input_1_mult, input_1_shift, input_2_offset, input_2_mult,
                          input_2_shift,  left_shift,   out_offset,    out_mult,       out_shift,
                          out_activation_min, out_activation_max};
    int32_t n = block_size;
#if defined(ARM_MATH_DSP)
    const uint32_t off1 = shim_offset_x2(input_1_offset);
    const uint32_t off2 = shim_offset_x2(input_2_offset);
    for (; n >= 4; n -= 4) {
        const uint32_t a = (uint32_t)arm_nn_read_s8x4_ia(&input_1_vect);
        const uint32_t b = (uint32_t)arm_nn_read_s8x4_ia(&input_2_vect);
        const uint32_t a02 = __SXTAB16(off1, a), a13 = __SXTAB16_RORn(off1, a, 8);
        const uint32_t b02 = __SXTAB16(off2, b), b13 = __SXTAB16_RORn(off2, b, 8);
        const uint8_t r0 = (uint8_t)add_one((int16_t)a02, (int16_t)b02, &p);
        const uint8_t r1 = (uint8_t)add_one((int16_t)a13, (int16_t)b13, &p);
        const uint8_t r2 = (uint8_t)add_one((int16_t)(a02 >> 16), (int16_t)(b02 >> 16), &p);
        const uint8_t r3 = (uint8_t)add_one((int16_t)(a13 >> 16), (int16_t)(b13 >> 16), &p);
        const uint32_t word = r0 | ((uint32_t)r1 << 8) | ((uint32_t)r2 << 16) | ((uint32_t)r3 << 24);
        memcpy(output, &word, 4);
        output += 4;
    }
#endif
    for (; n > 0; n--) {
        *output++ = add_one(*input_1_vect++ + input_1_offset, *input_2_vect++ + input_2_offset, &p);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
