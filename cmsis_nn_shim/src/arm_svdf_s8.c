/*
 * arm_svdf_s8 (cmsis_nn_shim): TFLite's int8 SVDF step with an int8 state and int8 time weights
 * (see shim_nnfunctions.h).
 *
 * One batch at a time: move its states, write each filter's new value straight into the state
 * with the fully connected kernel (one output every MEMORY bytes), then its time sums
 * (input_ctx) and unit sums (output_ctx). ctx (Helium's kernel sums) is not read.
 */
#include <string.h>

#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

arm_cmsis_nn_status arm_svdf_s8(const cmsis_nn_context *ctx,
                                const cmsis_nn_context *input_ctx,
                                const cmsis_nn_context *output_ctx,
                                const cmsis_nn_svdf_params *svdf_params,
                                const cmsis_nn_per_tensor_quant_params *input_quant_params,
                                const cmsis_nn_per_tensor_quant_params *output_quant_params,
                                const cmsis_nn_dims *input_dims,
                                const int8_t *input_data,
                                const cmsis_nn_dims *state_dims,
                                int8_t *state_data,
                                const cmsis_nn_dims *weights_feature_dims,
                                const int8_t *weights_feature_data,
                                const cmsis_nn_dims *weights_time_dims,
                                const int8_t *weights_time_data,
                                const cmsis_nn_dims *bias_dims,
                                const int32_t *bias_data,
                                const cmsis_nn_dims *output_dims,
                                int8_t *output_data)
{
    (void)ctx;
    (void)state_dims;
    (void)bias_dims;
    (void)output_dims;
    shim_svdf_sizes z;
    if (!shim_svdf_sizes_of(input_ctx, output_ctx, svdf_params, input_dims, weights_feature_dims, weights_time_dims,
                            &z))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }

    for (int32_t b = 0; b < z.batches; b++)
    {
        int8_t *state = state_data + b * z.filters * z.memory;
        int32_t *time_sums = (int32_t *)input_ctx->buf + b * z.filters;
        int32_t *unit_sums = (int32_t *)output_ctx->buf + b * z.units;

        /* each filter's memory moves one place towards its start; the last place is written next */
        memmove(state, state + 1, (size_t)(z.filters * z.memory - 1));
        arm_nn_vec_mat_mult_t_s8(input_data + b * z.input_size, weights_feature_data, NULL, NULL, state + z.memory - 1,
                                 -svdf_params->input_offset, 0, input_quant_params->multiplier,
                                 input_quant_params->shift, z.input_size, z.filters, svdf_params->input_activation.min,
                                 svdf_params->input_activation.max, z.memory, 0);

        const int8_t *wt = weights_time_data;
        const int8_t *s = state;
        for (int32_t f = 0; f < z.filters; f++)
        {
            uint32_t sum = 0; /* unsigned: the sums wrap as on the core, without C's signed overflow */
            for (int32_t m = 0; m < z.memory; m++)
            {
                sum += (uint32_t)((int32_t)wt[m] * (int32_t)s[m]);
            }
            wt += z.memory;
            s += z.memory;
            time_sums[f] = (int32_t)sum;
        }

        shim_svdf_units(time_sums, bias_data, z.units, z.rank, svdf_params, output_quant_params, unit_sums,
                        output_data + b * z.units);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* Helium's kernel sums only: none with the DSP extension */
int32_t arm_svdf_s8_get_buffer_size(const cmsis_nn_dims *filter_dims)
{
    (void)filter_dims;
    return 0;
}
