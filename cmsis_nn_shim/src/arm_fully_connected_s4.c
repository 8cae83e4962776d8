/*
 * arm_fully_connected_s4 (cmsis_nn_shim): arm_fully_connected_s8's layer with int4 weights
 * packed two a byte over the whole [C_OUT][N] filter (see shim_nnfunctions.h).
 *
 * N a multiple of 8 (every row starts on a word) and at most 65,536 (16 x the sum fits 32 bits,
 * shim_s4_dot8): two rows at a time, each 8 inputs widened
 * with the input offset into the order shim_s4_dot8 meets a packed word's weights -- with the
 * DSP extension SXTAB16 gives (x0, x2) (x1, x3) (x4, x6) (x5, x7) and PKHBT / PKHTB pair them
 * as (x0, x4) (x2, x6) (x1, x5) (x3, x7) -- and used for both rows. Otherwise (a row starting
 * mid-byte) a direct loop, a nibble per weight.
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* inputs k .. k + 7 plus the offset, in shim_s4_slot's order */
static inline void widen8(const int8_t *x, int32_t offset, int16_t *c)
{
#if defined(ARM_MATH_DSP)
    const uint32_t off2 = __PKHBT((uint32_t)(uint16_t)offset, (uint32_t)(uint16_t)offset, 16);
    const uint32_t a = (uint32_t)arm_nn_read_s8x4(x), b = (uint32_t)arm_nn_read_s8x4(x + 4);
    const uint32_t ea = __SXTAB16(off2, a), oa = __SXTAB16_RORn(off2, a, 8);
    const uint32_t eb = __SXTAB16(off2, b), ob = __SXTAB16_RORn(off2, b, 8);
    const uint32_t w[4] = {__PKHBT(ea, eb, 16), __PKHTB(eb, ea, 16), __PKHBT(oa, ob, 16), __PKHTB(ob, oa, 16)};
    memcpy(c, w, sizeof(w));
#else
    for (int32_t k = 0; k < 8; k++) {
        c[shim_s4_slot(k)] = (int16_t)(x[k] + offset);
    }
#endif
}

static inline int8_t finish(int32_t acc, int32_t o, const int32_t *bias, const cmsis_nn_fc_params *fp,
                            const cmsis_nn_per_tensor_quant_params *qp)
{
    return shim_s4_output(acc, bias, o, qp->multiplier, qp->shift, fp->output_offset, fp->activation);
}

arm_cmsis_nn_status arm_fully_connected_s4(const cmsis_nn_context *ctx,
                                           const cmsis_nn_fc_params *fc_params,
                                           const cmsis_nn_per_tensor_quant_params *quant_params,
                                           const cmsis_nn_dims *input_dims,
                                           const int8_t *input_data,
                                           const cmsis_nn_dims *filter_dims,
                                           const int8_t *filter_data,
                                           const cmsis_nn_dims *bias_dims,
                                           const int32_t *bias_data,
                                           const cmsis_nn_dims *output_dims,
                                           int8_t *output_data)
{
    (void)ctx;
    (void)bias_dims;
    const int32_t depth = filter_dims->n;
    const int32_t outputs = output_dims->c;
    const int fast = (depth & 7) == 0 && depth <= 65536;
    for (int32_t b = 0; b < input_dims->n; b++) {
        const int8_t *x = input_data + b * depth;
        int32_t o = 0;
        for (; fast && o < outputs; o += 2) {
            const int two = o + 1 < outputs;
            const int8_t *w0 = filter_data + o * (depth >> 1);
            uint32_t a0 = 0, a1 = 0;
            for (int32_t k = 0; k < depth; k += 8) {
                int16_t c[8];
                widen8(x + k, fc_params->input_offset, c);
                a0 = shim_s4_dot8((uint32_t)arm_nn_read_s8x4(w0 + (k >> 1)), c, a0);
                if (two) { /* the next row: (depth >> 1) bytes on */
                    a1 = shim_s4_dot8((uint32_t)arm_nn_read_s8x4(w0 + (depth >> 1) + (k >> 1)), c, a1);
                }
            }
            *output_data++ = finish((int32_t)a0 >> 4, o, bias_data, fc_params, quant_params);
            if (two) {
                *output_data++ = finish((int32_t)a1 >> 4, o + 1, bias_data, fc_params, quant_params);
            }
        }
        for (; o < outputs; o++) {
            int32_t acc = 0;
            for (int32_t k = 0; k < depth; k++) {
                acc += (x[k] + fc_params->input_offset) * shim_s4_weight(filter_data, o * depth + k);
            }
            *output_data++ = finish(acc, o, bias_data, fc_params, quant_params);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
