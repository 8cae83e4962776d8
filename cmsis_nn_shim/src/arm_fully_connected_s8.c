/*
 * arm_fully_connected_s8 (cmsis_nn_shim): TFLite int8 fully connected layer, one
 * arm_nn_vec_mat_mult_t_s8 per batch (see shim_nnfunctions.h).
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

arm_cmsis_nn_status arm_fully_connected_s8(const cmsis_nn_context *ctx,
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
    (void)bias_dims;
    const int32_t depth = filter_dims->n;
    const int32_t outputs = output_dims->c;
    const int32_t *kernel_sum = ctx ? (const int32_t *)ctx->buf : NULL;
    for (int32_t b = 0; b < input_dims->n; b++) {
        arm_nn_vec_mat_mult_t_s8(input_data + b * depth,
                                 filter_data,
                                 kernel_sum,
                                 bias_data,
                                 output_data + b * outputs,
                                 fc_params->input_offset,
                                 fc_params->output_offset,
                                 quant_params->multiplier,
                                 quant_params->shift,
                                 depth,
                                 outputs,
                                 fc_params->activation.min,
                                 fc_params->activation.max,
                                 1,
                                 fc_params->filter_offset);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

int32_t arm_fully_connected_s8_get_buffer_size(const cmsis_nn_dims *filter_dims)
{
    (void)filter_dims;
    return 0;
}
