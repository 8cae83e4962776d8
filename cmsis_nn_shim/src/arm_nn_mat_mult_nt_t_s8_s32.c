/*
 * arm_nn_mat_mult_nt_t_s8_s32 (cmsis_nn_shim): s8 x s8 -> s32, LHS [m][k] times RHS stored
 * transposed [n][k], accumulated into dst (see shim_nnsupportfunctions.h).
 *
 * Blocks of 2 LHS rows x 2 RHS rows keep four sums in registers over the whole depth. With the
 * DSP extension every 4 bytes of depth are widened to two pairs of halfwords with SXTB16 /
 * SXTAB16 (bytes 0,2 and 1,3 -- the same split on both sides, so the pairs line up) and
 * multiplied-and-added by SMLAD: 16 MACs for 4 loads, 6 extends and 8 SMLADs.
 */
#include "shim_nnsupportfunctions.h"

/* sum_p (l[p] + off) * r[p] for p in [from, k), wrapping */
static inline uint32_t tail_dot(const int8_t *l, const int8_t *r, int32_t from, int32_t k, int32_t off)
{
    uint32_t acc = 0;
    for (int32_t p = from; p < k; p++) {
        acc += (uint32_t)((l[p] + off) * r[p]);
    }
    return acc;
}

#if defined(ARM_MATH_DSP)
/* (l[p] + off) as halfword pairs: lo = bytes 0 and 2, hi = bytes 1 and 3 */
#define WIDEN_OFF(word, off2, lo, hi)                                                              \
    do {                                                                                           \
        lo = __SXTAB16((off2), (uint32_t)(word));                                                  \
        hi = __SXTAB16_RORn((off2), (uint32_t)(word), 8);                                          \
    } while (0)
#define WIDEN(word, lo, hi)                                                                        \
    do {                                                                                           \
        lo = __SXTB16((uint32_t)(word));                                                           \
        hi = __SXTB16_RORn((uint32_t)(word), 8);                                                   \
    } while (0)
#endif

/* d00 = l0.r0, d01 = l0.r1, d10 = l1.r0, d11 = l1.r1 over depth k */
static inline void dot_2x2(const int8_t *l0, const int8_t *l1, const int8_t *r0, const int8_t *r1, int32_t k,
                           int32_t off, uint32_t d[4])
{
    uint32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
    int32_t p = 0;
#if defined(ARM_MATH_DSP)
    const uint32_t off2 = __PKHBT((uint32_t)(uint16_t)off, (uint32_t)(uint16_t)off, 16);
    for (; p + 4 <= k; p += 4) {
        uint32_t x0lo, x0hi, x1lo, x1hi, y0lo, y0hi, y1lo, y1hi;
        WIDEN_OFF(arm_nn_read_s8x4(l0 + p), off2, x0lo, x0hi);
        WIDEN_OFF(arm_nn_read_s8x4(l1 + p), off2, x1lo, x1hi);
        WIDEN(arm_nn_read_s8x4(r0 + p), y0lo, y0hi);
        WIDEN(arm_nn_read_s8x4(r1 + p), y1lo, y1hi);
        a00 = __SMLAD(x0lo, y0lo, a00);
        a00 = __SMLAD(x0hi, y0hi, a00);
        a01 = __SMLAD(x0lo, y1lo, a01);
        a01 = __SMLAD(x0hi, y1hi, a01);
        a10 = __SMLAD(x1lo, y0lo, a10);
        a10 = __SMLAD(x1hi, y0hi, a10);
        a11 = __SMLAD(x1lo, y1lo, a11);
        a11 = __SMLAD(x1hi, y1hi, a11);
    }
#else
    for (; p < k; p++) {
        const int32_t x0 = l0[p] + off, x1 = l1[p] + off;
        const int32_t y0 = r0[p], y1 = r1[p];
        a00 += (uint32_t)(x0 * y0);
        a01 += (uint32_t)(x0 * y1);
        a10 += (uint32_t)(x1 * y0);
        a11 += (uint32_t)(x1 * y1);
    }
#endif
    d[0] = a00 + tail_dot(l0, r0, p, k, off);
    d[1] = a01 + tail_dot(l0, r1, p, k, off);
    d[2] = a10 + tail_dot(l1, r0, p, k, off);
    d[3] = a11 + tail_dot(l1, r1, p, k, off);
}

/* l.r over depth k */
static inline uint32_t dot_1x1(const int8_t *l, const int8_t *r, int32_t k, int32_t off)
{
    uint32_t acc = 0;
    int32_t p = 0;
#if defined(ARM_MATH_DSP)
    const uint32_t off2 = __PKHBT((uint32_t)(uint16_t)off, (uint32_t)(uint16_t)off, 16);
    for (; p + 4 <= k; p += 4) {
        uint32_t xlo, xhi, ylo, yhi;
        WIDEN_OFF(arm_nn_read_s8x4(l + p), off2, xlo, xhi);
        WIDEN(arm_nn_read_s8x4(r + p), ylo, yhi);
        acc = __SMLAD(xlo, ylo, acc);
        acc = __SMLAD(xhi, yhi, acc);
    }
#endif
    return acc + tail_dot(l, r, p, k, off);
}

static inline void add_to(int32_t *dst, uint32_t v)
{
    *dst = (int32_t)((uint32_t)*dst + v);
}

arm_cmsis_nn_status arm_nn_mat_mult_nt_t_s8_s32(const int8_t *lhs,
                                                const int8_t *rhs,
                                                int32_t *dst,
                                                const int32_t lhs_rows,
                                                const int32_t rhs_rows,
                                                const int32_t rhs_cols,
                                                const int32_t lhs_offset,
                                                const int32_t dst_idx_offset)
{
    const int32_t k = rhs_rows;
    const int32_t dst_row = dst_idx_offset * rhs_cols;
    int32_t i = 0;
    for (; i + 2 <= lhs_rows; i += 2) {
        const int8_t *l0 = lhs + i * k;
        const int8_t *l1 = l0 + k;
        int32_t *d0 = dst + i * dst_row;
        int32_t *d1 = d0 + dst_row;
        int32_t j = 0;
        for (; j + 2 <= rhs_cols; j += 2) {
            uint32_t d[4];
            dot_2x2(l0, l1, rhs + j * k, rhs + (j + 1) * k, k, lhs_offset, d);
            add_to(d0 + j * dst_idx_offset, d[0]);
            add_to(d0 + (j + 1) * dst_idx_offset, d[1]);
            add_to(d1 + j * dst_idx_offset, d[2]);
            add_to(d1 + (j + 1) * dst_idx_offset, d[3]);
        }
        if (j < rhs_cols) {
            add_to(d0 + j * dst_idx_offset, dot_1x1(l0, rhs + j * k, k, lhs_offset));
            add_to(d1 + j * dst_idx_offset, dot_1x1(l1, rhs + j * k, k, lhs_offset));
        }
    }
    if (i < lhs_rows) {
        const int8_t *l0 = lhs + i * k;
        int32_t *d0 = dst + i * dst_row;
        for (int32_t j = 0; j < rhs_cols; j++) {
            add_to(d0 + j * dst_idx_offset, dot_1x1(l0, rhs + j * k, k, lhs_offset));
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
