/*
 * arm_fully_connected_s4 (cmsis_nn_shim): arm_fully_connected_s8's layer with int4 weights
 * packed two a byte over the whole [C_OUT][N] filter (a row of odd length N starts mid-byte;
 * see shim_nnfunctions.h).
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

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
    for (int32_t b = 0; b < input_dims->n; b++) {
        const int8_t *x = input_data + b * depth;
        for (int32_t o = 0; o < outputs; o++) {
            int32_t acc = bias_data ? bias_data[o] : 0;
            for (int32_t k = 0; k < depth; k++) {
                acc += (x[k] + fc_params->input_offset) * shim_s4_weight(filter_data, o * depth + k);
            }
            acc = arm_nn_requantize(acc, quant_params->multiplier, quant_params->shift);
            acc += fc_params->output_offset;
            acc = MAX(acc, fc_params->activation.min);
            acc = MIN(acc, fc_params->activation.max);
            *output_data++ = (int8_t)acc;
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}
