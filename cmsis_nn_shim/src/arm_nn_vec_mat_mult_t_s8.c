/*
 * arm_nn_vec_mat_mult_t_s8 (cmsis_nn_shim): int8 vector x transposed int8 matrix, requantized
 * to int8 (the fully connected kernel; see shim_nnsupportfunctions.h).
 *
 * Two matrix rows at a time share each load of the vector. With the DSP extension 4 values of
 * depth are widened to halfword pairs with the offsets folded in (SXTAB16) and accumulated by
 * SMLAD; the remaining depth, and targets without DSP, use plain C.
 */
#include "shim_nnsupportfunctions.h"

static inline int8_t finish(uint32_t acc, const int32_t *bias, int32_t r, int32_t mult, int32_t shift,
                            int32_t dst_offset, int32_t act_min, int32_t act_max)
{
    if (bias) {
        acc += (uint32_t)bias[r];
    }
    int32_t v = arm_nn_requantize((int32_t)acc, mult, shift) + dst_offset;
    v = MAX(v, act_min);
    v = MIN(v, act_max);
    return (int8_t)v;
}

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
                                             const int32_t rhs_offset)
{
    (void)kernel_sum;
    const int32_t k = rhs_cols;
#if defined(ARM_MATH_DSP)
    const uint32_t loff2 = __PKHBT((uint32_t)(uint16_t)lhs_offset, (uint32_t)(uint16_t)lhs_offset, 16);
    const uint32_t roff2 = __PKHBT((uint32_t)(uint16_t)rhs_offset, (uint32_t)(uint16_t)rhs_offset, 16);
#endif
    int32_t r = 0;
    for (; r + 2 <= rhs_rows; r += 2) {
        const int8_t *w0 = rhs + r * k;
        const int8_t *w1 = w0 + k;
        uint32_t a0 = 0, a1 = 0;
        int32_t p = 0;
#if defined(ARM_MATH_DSP)
        for (; p + 4 <= k; p += 4) {
            const uint32_t x = (uint32_t)arm_nn_read_s8x4(lhs + p);
            const uint32_t xlo = __SXTAB16(loff2, x), xhi = __SXTAB16_RORn(loff2, x, 8);
            const uint32_t y0 = (uint32_t)arm_nn_read_s8x4(w0 + p);
            const uint32_t y1 = (uint32_t)arm_nn_read_s8x4(w1 + p);
            a0 = __SMLAD(xlo, __SXTAB16(roff2, y0), a0);
            a0 = __SMLAD(xhi, __SXTAB16_RORn(roff2, y0, 8), a0);
            a1 = __SMLAD(xlo, __SXTAB16(roff2, y1), a1);
            a1 = __SMLAD(xhi, __SXTAB16_RORn(roff2, y1, 8), a1);
        }
#endif
        for (; p < k; p++) {
            const int32_t x = lhs[p] + lhs_offset;
            a0 += (uint32_t)(x * (w0[p] + rhs_offset));
            a1 += (uint32_t)(x * (w1[p] + rhs_offset));
        }
        dst[r * address_offset] =
            finish(a0, bias, r, dst_multiplier, dst_shift, dst_offset, activation_min, activation_max);
        dst[(r + 1) * address_offset] =
            finish(a1, bias, r + 1, dst_multiplier, dst_shift, dst_offset, activation_min, activation_max);
    }
    if (r < rhs_rows) {
        const int8_t *w0 = rhs + r * k;
        uint32_t a0 = 0;
        int32_t p = 0;
#if defined(ARM_MATH_DSP)
        for (; p + 4 <= k; p += 4) {
            const uint32_t x = (uint32_t)arm_nn_read_s8x4(lhs + p);
            const uint32_t y0 = (uint32_t)arm_nn_read_s8x4(w0 + p);
            a0 = __SMLAD(__SXTAB16(loff2, x), __SXTAB16(roff2, y0), a0);
            a0 = __SMLAD(__SXTAB16_RORn(loff2, x, 8), __SXTAB16_RORn(roff2, y0, 8), a0);
        }
#endif
        for (; p < k; p++) {
            a0 += (uint32_t)((lhs[p] + lhs_offset) * (w0[p] + rhs_offset));
        }
        dst[r * address_offset] =
            finish(a0, bias, r, dst_multiplier, dst_shift, dst_offset, activation_min, activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
