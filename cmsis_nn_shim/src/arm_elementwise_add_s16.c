/*
 * arm_elementwise_add_s16 (cmsis_nn_shim): TFLite int16 add of two tensors of one shape, CMSIS-NN
 * v7.0.0's arithmetic (see shim_nnfunctions.h): each input shifted left by left_shift and
 * requantized by its own multiplier and shift, the two added, the sum requantized, clamped.
 * The offsets are not read (int16 zero points are 0). Two elements a trip, read as one word
 * from each input and written as one.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

typedef struct
{
    int32_t mult1, shift1, mult2, shift2, left_shift, out_mult, out_shift, act_min, act_max;
} add_params;

static inline int16_t add_one(int32_t a, int32_t b, const add_params *p)
{
    a = arm_nn_requantize((int32_t)((uint32_t)a << p->left_shift), p->mult1, p->shift1);
    b = arm_nn_requantize((int32_t)((uint32_t)b << p->left_shift), p->mult2, p->shift2);
    int32_t sum = arm_nn_requantize((int32_t)((uint32_t)a + (uint32_t)b), p->out_mult, p->out_shift);
    sum = MAX(sum, p->act_min);
    sum = MIN(sum, p->act_max);
    return (int16_t)sum;
}

arm_cmsis_nn_status arm_elementwise_add_s16(const int16_t *input_1_vect,
                                            const int16_t *input_2_vect,
                                            const int32_t input_1_offset,
                                            const int32_t input_1_mult,
                                            const int32_t input_1_shift,
                                            const int32_t input_2_offset,
                                            const int32_t input_2_mult,
                                            const int32_t input_2_shift,
                                            const int32_t left_shift,
                                            int16_t *output,
                                            const int32_t out_offset,
                                            const int32_t out_mult,
                                            const int32_t out_shift,
                                            const int32_t out_activation_min,
                                            const int32_t out_activation_max,
                                            const int32_t block_size)
{
    (void)input_1_offset;
    (void)input_2_offset;
    (void)out_offset;
    const add_params p = {input_1_mult, input_1_shift, input_2_mult, input_2_shift, left_shift,
                          out_mult,     out_shift,     out_activation_min, out_activation_max};
    int32_t n = block_size;
    for (; n >= 2; n -= 2) {
        const int32_t a = arm_nn_read_q15x2_ia(&input_1_vect);
        const int32_t b = arm_nn_read_q15x2_ia(&input_2_vect);
        const uint16_t lo = (uint16_t)add_one((int16_t)a, (int16_t)b, &p);
        const uint16_t hi = (uint16_t)add_one(a >> 16, b >> 16, &p);
        const uint32_t word = lo | ((uint32_t)hi << 16);
        memcpy(output, &word, 4);
        output += 2;
    }
    if (n > 0) {
        *output = add_one(*input_1_vect, *input_2_vect, &p);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
