/*
 * shim_nn_types.h (cmsis_nn_shim) -- the public CMSIS-NN types.
 *
 * Same names, members, member order and enum values as CMSIS-NN v7.0.0 (its arm_nn_types.h
 * V.3.5.0), so code written against CMSIS-NN builds against the shim and
 * the other way round. Written for this project; see cmsis_nn_shim/README.md.
 */
#ifndef SHIM_NN_TYPES_H
#define SHIM_NN_TYPES_H

#include <stdbool.h>
#include <stdint.h>

/* Activation function selector (LSTM gates). */
typedef enum
{
    ARM_SIGMOID = 0,
    ARM_TANH = 1,
} arm_nn_activation_type;

/* Return code of every CMSIS-NN function that can fail. */
typedef enum
{
    ARM_CMSIS_NN_SUCCESS = 0,
    ARM_CMSIS_NN_ARG_ERROR = -1,
    ARM_CMSIS_NN_NO_IMPL_ERROR = -2,
    ARM_CMSIS_NN_FAILURE = -3,
} arm_cmsis_nn_status;

/* Width and height of a 2-D quantity (stride, padding, dilation). */
typedef struct
{
    int32_t w;
    int32_t h;
} cmsis_nn_tile;

/* Scratch memory handed to a function (size from its *_get_buffer_size()). */
typedef struct
{
    void *buf;
    int32_t size;
} cmsis_nn_context;

/* Bias of the int16 variants: int32 or int64 values. */
typedef struct
{
    const void *data;
    const bool is_int32_bias;
} cmsis_nn_bias_data;

/* Tensor dimensions. n is the batch, or the output channels of a filter (see each function). */
typedef struct
{
    int32_t n;
    int32_t h;
    int32_t w;
    int32_t c;
} cmsis_nn_dims;

/* LSTM dimensions. */
typedef struct
{
    int32_t max_time;
    int32_t num_inputs;
    int32_t num_batches;
    int32_t num_outputs;
} cmsis_nn_lstm_dims;

/* Per-channel requantization: one multiplier and one shift per output channel. */
typedef struct
{
    int32_t *multiplier;
    int32_t *shift;
} cmsis_nn_per_channel_quant_params;

/* Per-tensor requantization. */
typedef struct
{
    int32_t multiplier;
    int32_t shift;
} cmsis_nn_per_tensor_quant_params;

/* Per-channel or per-tensor requantization (the wrappers' choice): with is_per_channel 0 the
   arrays hold one pair. */
typedef struct
{
    int32_t *multiplier;
    int32_t *shift;
    int32_t is_per_channel;
} cmsis_nn_quant_params;

/* Output clamp (the fused activation). */
typedef struct
{
    int32_t min;
    int32_t max;
} cmsis_nn_activation;

/* Convolution: offsets are the negated zero points of input and output. */
typedef struct
{
    int32_t input_offset;
    int32_t output_offset;
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
} cmsis_nn_conv_params;

/* Transposed convolution. */
typedef struct
{
    int32_t input_offset;
    int32_t output_offset;
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile padding_offsets;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
} cmsis_nn_transpose_conv_params;

/* Depthwise convolution; ch_mult * in_ch = out_ch. */
typedef struct
{
    int32_t input_offset;
    int32_t output_offset;
    int32_t ch_mult;
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
} cmsis_nn_dw_conv_params;

/* Pooling. */
typedef struct
{
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_activation activation;
} cmsis_nn_pool_params;

/* Fully connected: offsets are the negated zero points of input, filter and output. */
typedef struct
{
    int32_t input_offset;
    int32_t filter_offset;
    int32_t output_offset;
    cmsis_nn_activation activation;
} cmsis_nn_fc_params;

/* Batch matrix multiplication: adj_x / adj_y transpose the left / right operand. */
typedef struct
{
    const bool adj_x;
    const bool adj_y;
    cmsis_nn_fc_params fc_params;
} cmsis_nn_bmm_params;

/* Transpose: output dimension i is input dimension permutations[i]. */
typedef struct
{
    const int32_t num_dims;
    const uint32_t *permutations;
} cmsis_nn_transpose_params;

/* SVDF. */
typedef struct
{
    int32_t rank;
    int32_t input_offset;
    int32_t output_offset;
    cmsis_nn_activation input_activation;
    cmsis_nn_activation output_activation;
} cmsis_nn_svdf_params;

/* Lookup tables of softmax s16. */
typedef struct
{
    const int16_t *exp_lut;
    const int16_t *one_by_one_lut;
} cmsis_nn_softmax_lut_s16;

/* A multiplier/shift pair. */
typedef struct
{
    int32_t multiplier;
    int32_t shift;
} cmsis_nn_scaling;

/* One LSTM gate. */
typedef struct
{
    int32_t input_multiplier;
    int32_t input_shift;
    const void *input_weights;
    const void *input_effective_bias;

    int32_t hidden_multiplier;
    int32_t hidden_shift;
    const void *hidden_weights;
    const void *hidden_effective_bias;

    const void *bias;
    arm_nn_activation_type activation_type;
} cmsis_nn_lstm_gate;

/* LSTM layer. */
typedef struct
{
    int32_t time_major;
    int32_t batch_size;
    int32_t time_steps;
    int32_t input_size;
    int32_t hidden_size;

    int32_t input_offset;

    int32_t forget_to_cell_multiplier;
    int32_t forget_to_cell_shift;
    int32_t input_to_cell_multiplier;
    int32_t input_to_cell_shift;
    int32_t cell_clip;
    int32_t cell_scale_power;

    int32_t output_multiplier;
    int32_t output_shift;
    int32_t output_offset;

    cmsis_nn_lstm_gate forget_gate;
    cmsis_nn_lstm_gate input_gate;
    cmsis_nn_lstm_gate cell_gate;
    cmsis_nn_lstm_gate output_gate;
} cmsis_nn_lstm_params;

/* LSTM scratch buffers. */
typedef struct
{
    void *temp1;
    void *temp2;
    void *cell_state;
} cmsis_nn_lstm_context;

#endif /* SHIM_NN_TYPES_H */
