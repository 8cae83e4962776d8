/*
 * shim_nnfunctions.h (cmsis_nn_shim) -- the part of CMSIS-NN's public API the shim implements.
 *
 * Signatures and semantics are those of CMSIS-NN v7.0.0 (arm_nnfunctions.h V.18.0.0,
 * 4 November 2024): TensorFlow Lite int8 quantization, NHWC activations, requantization with
 * arm_nn_requantize() (shim_nnsupportfunctions.h). A real CMSIS-NN checkout can replace the
 * shim (see specializer/library/cmsis.py); code calling these functions builds against either.
 */
#ifndef SHIM_NNFUNCTIONS_H
#define SHIM_NNFUNCTIONS_H

#include "shim_nn_math_types.h"
#include "shim_nn_types.h"

#define USE_INTRINSIC

#ifdef __cplusplus
extern "C" {
#endif

/*
 * s8 convolution, TFLite semantics.
 *
 *   ctx           scratch of arm_convolve_s8_get_buffer_size() bytes; ctx->buf must not be NULL
 *   conv_params   input_offset (-input zero point, [-127, 128]), output_offset (output zero
 *                 point, [-128, 127]), stride, padding (top/left; bottom/right padding is
 *                 implied by output_dims), dilation, activation clamp
 *   quant_params  per output channel multiplier and shift
 *   input_dims    [N, H, W, C_IN], input_data NHWC int8
 *   filter_dims   [C_OUT, HK, WK, CK], filter_data OHWI int8. CK == C_IN, or grouped
 *                 convolution with C_IN = G * CK and C_OUT = G * M (G groups of M channels)
 *   bias_dims     [C_OUT]; bias_data int32, may be NULL
 *   upscale_dims  NULL, or h / w == 2 to upscale the input 2x in that dimension (new in v7.0.0,
 *                 for transposed convolution): input_dims then give the upscaled size,
 *                 twice the data's rows / columns; data row r is upscaled row 2r, and the
 *                 odd upscaled rows / columns hold the zero point
 *   output_dims   [N, H_OUT, W_OUT, C_OUT], output_data NHWC int8
 *
 *   out[n][y][x][o] = clamp(requantize(bias[o] + sum (in[n][iy][ix][g*CK + c] + input_offset)
 *                                        * filter[o][ky][kx][c], mult[o], shift[o])
 *                           + output_offset, act.min, act.max)
 *   with iy = y*stride.h - padding.h + ky*dilation.h (likewise ix) and g = o / M; taps outside
 *   the input, and upscaled taps between input rows / columns, contribute nothing (their
 *   value is the input zero point).
 *
 * Returns ARM_CMSIS_NN_ARG_ERROR when ctx->buf is NULL or the group layout is invalid, else
 * ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_convolve_s8(const cmsis_nn_context *ctx,
                                    const cmsis_nn_conv_params *conv_params,
                                    const cmsis_nn_per_channel_quant_params *quant_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int8_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const int8_t *filter_data,
                                    const cmsis_nn_dims *bias_dims,
                                    const int32_t *bias_data,
                                    const cmsis_nn_dims *upscale_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int8_t *output_data);

/* Scratch bytes arm_convolve_s8() needs: two im2col columns of int16,
   2 * round_up_4(filter_dims->w * filter_dims->h * input_dims->c) * sizeof(int16_t). */
int32_t arm_convolve_s8_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims);

/*
 * The s8 convolution TFLite Micro calls: arm_convolve_s8's arguments without upscale_dims and
 * its results, computed by the form the shapes allow (CMSIS-NN v7.0.0's choice, no Helium):
 *
 *   1x1 filter, padding 0, dilation 1, input_dims->c == filter_dims->c:
 *       stride 1x1 -> arm_convolve_1x1_s8_fast, else arm_convolve_1x1_s8
 *   else input_dims->h == 1, filter_dims->h == 1, dilation.w == 1,
 *        (stride.w * input_dims->c) % 4 == 0, input_dims->c == filter_dims->c
 *       -> arm_convolve_1_x_n_s8
 *   else -> arm_convolve_s8 (upscale_dims NULL)
 *
 * ctx: scratch of arm_convolve_wrapper_s8_get_buffer_size() bytes (its buf may be NULL when
 * that is 0). Returns the chosen form's status.
 */
arm_cmsis_nn_status arm_convolve_wrapper_s8(const cmsis_nn_context *ctx,
                                            const cmsis_nn_conv_params *conv_params,
                                            const cmsis_nn_per_channel_quant_params *quant_params,
                                            const cmsis_nn_dims *input_dims,
                                            const int8_t *input_data,
                                            const cmsis_nn_dims *filter_dims,
                                            const int8_t *filter_data,
                                            const cmsis_nn_dims *bias_dims,
                                            const int32_t *bias_data,
                                            const cmsis_nn_dims *output_dims,
                                            int8_t *output_data);

/* Scratch bytes arm_convolve_wrapper_s8() needs on this core: the chosen form's (1x1: 0, unless
   built by Arm Compiler 6 with the DSP extension: 2 * C_IN int16; 1xN and the general form:
   arm_convolve_s8_get_buffer_size()). The _dsp form is that for a core with the DSP extension,
   whatever this build's. As in CMSIS-NN v7.0.0 the 1x1 test here does not compare C_IN with the
   filter's C. */
int32_t arm_convolve_wrapper_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                                const cmsis_nn_dims *input_dims,
                                                const cmsis_nn_dims *filter_dims,
                                                const cmsis_nn_dims *output_dims);
int32_t arm_convolve_wrapper_s8_get_buffer_size_dsp(const cmsis_nn_conv_params *conv_params,
                                                    const cmsis_nn_dims *input_dims,
                                                    const cmsis_nn_dims *filter_dims,
                                                    const cmsis_nn_dims *output_dims);

/* 1x1 convolution, padding 0, stride 1x1 (ARM_CMSIS_NN_ARG_ERROR otherwise); filter
   [C_OUT, 1, 1, C_IN]. No scratch is used. */
arm_cmsis_nn_status arm_convolve_1x1_s8_fast(const cmsis_nn_context *ctx,
                                             const cmsis_nn_conv_params *conv_params,
                                             const cmsis_nn_per_channel_quant_params *quant_params,
                                             const cmsis_nn_dims *input_dims,
                                             const int8_t *input_data,
                                             const cmsis_nn_dims *filter_dims,
                                             const int8_t *filter_data,
                                             const cmsis_nn_dims *bias_dims,
                                             const int32_t *bias_data,
                                             const cmsis_nn_dims *output_dims,
                                             int8_t *output_data);

/* Scratch bytes arm_convolve_1x1_s8_fast() needs: 0 (2 * C_IN int16 only when CMSIS-NN is
   built by Arm Compiler 6 with the DSP extension). */
int32_t arm_convolve_1x1_s8_fast_get_buffer_size(const cmsis_nn_dims *input_dims);

/* 1x1 convolution, padding 0 (ARM_CMSIS_NN_ARG_ERROR otherwise), any stride. No scratch. */
arm_cmsis_nn_status arm_convolve_1x1_s8(const cmsis_nn_context *ctx,
                                        const cmsis_nn_conv_params *conv_params,
                                        const cmsis_nn_per_channel_quant_params *quant_params,
                                        const cmsis_nn_dims *input_dims,
                                        const int8_t *input_data,
                                        const cmsis_nn_dims *filter_dims,
                                        const int8_t *filter_data,
                                        const cmsis_nn_dims *bias_dims,
                                        const int32_t *bias_data,
                                        const cmsis_nn_dims *output_dims,
                                        int8_t *output_data);

/* 1xN convolution: input_dims->h == 1, dilation.w == 1, stride.w > 0 and
   (stride.w * input_dims->c) % 4 == 0, ctx->buf not NULL (ARM_CMSIS_NN_ARG_ERROR otherwise).
   Scratch: arm_convolve_1_x_n_s8_get_buffer_size() (without Helium arm_convolve_s8's). */
arm_cmsis_nn_status arm_convolve_1_x_n_s8(const cmsis_nn_context *ctx,
                                          const cmsis_nn_conv_params *conv_params,
                                          const cmsis_nn_per_channel_quant_params *quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input_data,
                                          const cmsis_nn_dims *filter_dims,
                                          const int8_t *filter_data,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias_data,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output_data);

int32_t arm_convolve_1_x_n_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                              const cmsis_nn_dims *input_dims,
                                              const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *output_dims);

/*
 * s8 transposed convolution, TFLite semantics (TRANSPOSE_CONV).
 *
 *   ctx                    scratch of arm_transpose_conv_s8_get_buffer_size() bytes (the shim
 *                          needs none; CMSIS-NN's rolling int32 rows do)
 *   output_ctx             unused here and by CMSIS-NN's function (its wrapper's reversed filter)
 *   transpose_conv_params  input_offset ([-127, 128]), output_offset ([-128, 127]), stride,
 *                          padding (top, left: the output starts that far into the full
 *                          transposed result), activation clamp; padding_offsets and dilation
 *                          are not read (TFLite has no dilated transposed convolution)
 *   filter_dims            [C_OUT, HK, WK, C_IN], filter_data int8
 *   bias_data              int32 [C_OUT], may be NULL
 *   output_dims            [N, H_OUT, W_OUT, C_OUT]
 *
 *   out[n][y][x][o] = clamp(requantize(bias[o] + sum (in[n][iy][ix][c] + input_offset)
 *                                        * filter[o][ky][kx][c], mult[o], shift[o])
 *                           + output_offset, act.min, act.max)
 *   over iy, ix, ky, kx, c with y = iy * stride.h - padding.h + ky, x = ix * stride.w - padding.w + kx.
 */
arm_cmsis_nn_status arm_transpose_conv_s8(const cmsis_nn_context *ctx,
                                          const cmsis_nn_context *output_ctx,
                                          const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                          const cmsis_nn_per_channel_quant_params *quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input_data,
                                          const cmsis_nn_dims *filter_dims,
                                          const int8_t *filter_data,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias_data,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output_data);

/* CMSIS-NN v7.0.0's size without its reverse-conv path: MAX(HK, stride.h) rows of
   ((W_IN - 1) * stride.w + MAX(WK, stride.h)) * C_OUT int32 sums. */
int32_t arm_transpose_conv_s8_get_buffer_size(const cmsis_nn_transpose_conv_params *transpose_conv_params,
                                              const cmsis_nn_dims *input_dims,
                                              const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *out_dims);

/*
 * s8 SVDF with an int16 state and int16 time weights, TFLite semantics (one SVDF step).
 *
 *   input_ctx        BATCH * FILTERS int32 (each filter's time sum), buf not NULL
 *   output_ctx       BATCH * UNITS int32 (each unit's sum), buf not NULL
 *   svdf_params      rank; input_offset / output_offset the input's / output's zero point;
 *                    input_activation the clamp of the state's new values (int16), and
 *                    output_activation of the output
 *   input_dims       n = BATCH, h = INPUT_SIZE; input_data int8
 *   state_data       int16 [BATCH][FILTERS][MEMORY], oldest first; updated in place
 *   weights_feature_dims  n = FILTERS, h = INPUT_SIZE; int8
 *   weights_time_dims     n = FILTERS, h = MEMORY; int16
 *   bias_data        int32 [UNITS] (UNITS = FILTERS / rank), may be NULL
 *   output_data      int8 [BATCH][UNITS]
 *
 *   every state moves one place towards its start, then per filter f
 *     state[b][f][MEMORY - 1] = clamp(requantize(sum_i wf[f][i] * (in[b][i] - input_offset),
 *                                                input_quant), input_activation)
 *   out[b][u] = clamp(requantize(bias[u] + sum_{f in u's rank filters} sum_m state[b][f][m]
 *                                * wt[f][m], output_quant) + output_offset, output_activation)
 *
 * Returns ARM_CMSIS_NN_ARG_ERROR when a buffer is NULL or FILTERS is not a multiple of rank.
 */
arm_cmsis_nn_status arm_svdf_state_s16_s8(const cmsis_nn_context *input_ctx,
                                          const cmsis_nn_context *output_ctx,
                                          const cmsis_nn_svdf_params *svdf_params,
                                          const cmsis_nn_per_tensor_quant_params *input_quant_params,
                                          const cmsis_nn_per_tensor_quant_params *output_quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input_data,
                                          const cmsis_nn_dims *state_dims,
                                          int16_t *state_data,
                                          const cmsis_nn_dims *weights_feature_dims,
                                          const int8_t *weights_feature_data,
                                          const cmsis_nn_dims *weights_time_dims,
                                          const int16_t *weights_time_data,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias_data,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output_data);

/*
 * s8 SVDF with an int8 state and int8 time weights: arm_svdf_state_s16_s8's step with int8 in
 * place of int16 (state_data int8 [BATCH][FILTERS][MEMORY], weights_time_data int8; the new
 * values clamped to input_activation: int8's range is TFLite's reference, which clamps to the
 * state's type; TFLite Micro's CMSIS-NN glue passes int16's). ctx is
 * Helium's (kernel sums) and not read; arm_svdf_s8_get_buffer_size() gives 0.
 */
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
                                int8_t *output_data);

int32_t arm_svdf_s8_get_buffer_size(const cmsis_nn_dims *filter_dims);

/*
 * s8 LSTM over a sequence, TFLite's fully integer UNIDIRECTIONAL_SEQUENCE_LSTM (int8 input and
 * hidden state, int16 cell state), starting from the hidden state at output_offset and the
 * cell at 0 (buffers->cell_state is cleared here).
 *
 *   input    int8 [time][batch][input_size] (time_major) or [batch][time][input_size]
 *   output   int8, the hidden state of every step, laid out as the input
 *   params   each gate's input and hidden weights (int8 [hidden_size][input_size] and
 *            [hidden_size][hidden_size]) and effective biases (int32 [hidden_size]: the bias with
 *            the input zero point folded in, and -output_offset * the hidden weights' row sums),
 *            their multipliers into int16 at 2^-12; activation_type ARM_SIGMOID (or ARM_TANH for
 *            the cell gate); the products forget * cell, input * cell gate and output * tanh(cell)
 *            requantized by forget_to_cell_*, input_to_cell_* and output_*; the cell clamped to
 *            +-cell_clip after the int16 saturation (<= 0: no clip); the cell at 2^cell_scale_power
 *   buffers  temp1, temp2, cell_state: int16 [batch][hidden_size] each
 */
arm_cmsis_nn_status arm_lstm_unidirectional_s8(const int8_t *input,
                                               int8_t *output,
                                               const cmsis_nn_lstm_params *params,
                                               cmsis_nn_lstm_context *buffers);

/*
 * s8 fully connected layer, TFLite semantics.
 *
 *   ctx           scratch of arm_fully_connected_s8_get_buffer_size() bytes (0 without MVE;
 *                 ctx->buf may then be NULL)
 *   fc_params     input_offset ([-127, 128]), filter_offset, output_offset ([-128, 127]),
 *                 activation clamp
 *   quant_params  per-tensor multiplier and shift
 *   input_dims    [N, H, W, C_IN]: N batches of filter_dims->n values each
 *   filter_dims   [ACCUM_DEPTH, ?, ?, OUTPUT_DEPTH]: n is the accumulation depth
 *   filter_data   int8, [OUTPUT_DEPTH][ACCUM_DEPTH] (one row per output, the TFLite layout)
 *   bias_data     int32 [OUTPUT_DEPTH], may be NULL
 *   output_dims   [N, OUTPUT_DEPTH] (output_dims->c is the output depth), output_data int8
 *
 *   out[b][r] = clamp(requantize(bias[r] + sum_k (in[b][k] + input_offset)
 *                                             * (filter[r][k] + filter_offset), mult, shift)
 *                     + output_offset, act.min, act.max)
 */
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
                                           int8_t *output_data);

/*
 * s8 depthwise convolution, TFLite semantics.
 *
 *   ctx             unused by this implementation (may be NULL)
 *   dw_conv_params  input_offset ([-127, 128]), output_offset ([-128, 127]), ch_mult, stride,
 *                   padding (top/left), dilation, activation clamp
 *   quant_params    per output channel multiplier and shift
 *   input_dims      [N, H, W, C_IN], input_data NHWC int8
 *   filter_dims     [1, HK, WK, C_OUT], filter_data int8, C_OUT = C_IN * ch_mult
 *   bias_data       int32 [C_OUT], may be NULL
 *   output_dims     [N, H_OUT, W_OUT, C_OUT], output_data NHWC int8
 *
 *   out[n][y][x][o] = clamp(requantize(bias[o] + sum (in[n][iy][ix][o / ch_mult] + input_offset)
 *                                        * filter[0][ky][kx][o], mult[o], shift[o])
 *                           + output_offset, act.min, act.max)
 *   over the taps inside the input (iy, ix as for arm_convolve_s8).
 *
 * Returns ARM_CMSIS_NN_ARG_ERROR when C_OUT != C_IN * ch_mult, else ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_depthwise_conv_s8(const cmsis_nn_context *ctx,
                                          const cmsis_nn_dw_conv_params *dw_conv_params,
                                          const cmsis_nn_per_channel_quant_params *quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input_data,
                                          const cmsis_nn_dims *filter_dims,
                                          const int8_t *filter_data,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias_data,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output_data);

/*
 * The s8 depthwise convolution TFLite Micro calls: arm_depthwise_conv_s8's arguments and
 * results, computed by the form the shapes allow (CMSIS-NN v7.0.0's choice, no Helium):
 *
 *   ch_mult == 1, N == 1, dilation 1x1:
 *       3x3 filter, padding.h <= 1, padding.w <= 1 -> arm_depthwise_conv_3x3_s8
 *       else                                       -> arm_depthwise_conv_s8_opt
 *   else                                           -> arm_depthwise_conv_s8
 *
 * ctx: scratch of arm_depthwise_conv_wrapper_s8_get_buffer_size() bytes (its buf may be NULL
 * when that is 0).
 */
arm_cmsis_nn_status arm_depthwise_conv_wrapper_s8(const cmsis_nn_context *ctx,
                                                  const cmsis_nn_dw_conv_params *dw_conv_params,
                                                  const cmsis_nn_per_channel_quant_params *quant_params,
                                                  const cmsis_nn_dims *input_dims,
                                                  const int8_t *input_data,
                                                  const cmsis_nn_dims *filter_dims,
                                                  const int8_t *filter_data,
                                                  const cmsis_nn_dims *bias_dims,
                                                  const int32_t *bias_data,
                                                  const cmsis_nn_dims *output_dims,
                                                  int8_t *output_data);

/* Scratch bytes arm_depthwise_conv_wrapper_s8() needs: with input_dims->c == output_dims->c,
   N == 1 and dilation 1x1, 0 for the 3x3 form and arm_depthwise_conv_s8_opt_get_buffer_size()
   otherwise; else 0. The _dsp form is that for a core with the DSP extension. */
int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                      const cmsis_nn_dims *input_dims,
                                                      const cmsis_nn_dims *filter_dims,
                                                      const cmsis_nn_dims *output_dims);
int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                          const cmsis_nn_dims *input_dims,
                                                          const cmsis_nn_dims *filter_dims,
                                                          const cmsis_nn_dims *output_dims);

/* 3x3 depthwise convolution, C_IN == C_OUT, padding.w <= 1 (ARM_CMSIS_NN_ARG_ERROR otherwise;
   the wrapper also keeps padding.h <= 1). No scratch. */
arm_cmsis_nn_status arm_depthwise_conv_3x3_s8(const cmsis_nn_context *ctx,
                                              const cmsis_nn_dw_conv_params *dw_conv_params,
                                              const cmsis_nn_per_channel_quant_params *quant_params,
                                              const cmsis_nn_dims *input_dims,
                                              const int8_t *input_data,
                                              const cmsis_nn_dims *filter_dims,
                                              const int8_t *filter_data,
                                              const cmsis_nn_dims *bias_dims,
                                              const int32_t *bias_data,
                                              const cmsis_nn_dims *output_dims,
                                              int8_t *output_data);

/* Depthwise convolution with C_IN == C_OUT (ARM_CMSIS_NN_ARG_ERROR otherwise, or when ctx->buf
   is NULL and arm_depthwise_conv_s8_opt_get_buffer_size() is not 0). */
arm_cmsis_nn_status arm_depthwise_conv_s8_opt(const cmsis_nn_context *ctx,
                                              const cmsis_nn_dw_conv_params *dw_conv_params,
                                              const cmsis_nn_per_channel_quant_params *quant_params,
                                              const cmsis_nn_dims *input_dims,
                                              const int8_t *input_data,
                                              const cmsis_nn_dims *filter_dims,
                                              const int8_t *filter_data,
                                              const cmsis_nn_dims *bias_dims,
                                              const int32_t *bias_data,
                                              const cmsis_nn_dims *output_dims,
                                              int8_t *output_data);

/* Scratch bytes arm_depthwise_conv_s8_opt() needs: C_IN * KH * KW int16 with the DSP extension,
   else 0. */
int32_t arm_depthwise_conv_s8_opt_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims);

/* Scratch bytes arm_fully_connected_s8() needs: 0 (the MVE kernel sums are not used here). */
int32_t arm_fully_connected_s8_get_buffer_size(const cmsis_nn_dims *filter_dims);

/*
 * int4 weights (CMSIS-NN v7.0.0's s4 functions): the same layers as arm_convolve_s8,
 * arm_depthwise_conv_s8 and arm_fully_connected_s8 -- int8 activations, the same offsets,
 * requantization and clamp -- with the filter's weights in [-8, 7] packed two a byte in the
 * filter's row-major order, the first in the low nibble ([1, 2, 3, 4] is 0x21 0x43; an odd
 * count leaves the last high nibble unused). Dilation must be 1 (only stride and padding are
 * read). arm_convolve_s4's ctx holds two int16 columns of KH * KW * C_IN taps;
 * arm_convolve_s4_get_buffer_size gives arm_convolve_s8's size (the taps rounded up to 4), at least
 * v7.0.0's 2 * 2 * taps, so a buffer sized either way fits. Without a buffer (v7.0.0 refuses one)
 * and for rows not a multiple of 8 weights the shim takes a direct loop.
 */
arm_cmsis_nn_status arm_convolve_s4(const cmsis_nn_context *ctx,
                                    const cmsis_nn_conv_params *conv_params,
                                    const cmsis_nn_per_channel_quant_params *quant_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int8_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const int8_t *filter_data,
                                    const cmsis_nn_dims *bias_dims,
                                    const int32_t *bias_data,
                                    const cmsis_nn_dims *output_dims,
                                    int8_t *output_data);

int32_t arm_convolve_s4_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims);

arm_cmsis_nn_status arm_depthwise_conv_s4(const cmsis_nn_context *ctx,
                                          const cmsis_nn_dw_conv_params *dw_conv_params,
                                          const cmsis_nn_per_channel_quant_params *quant_params,
                                          const cmsis_nn_dims *input_dims,
                                          const int8_t *input,
                                          const cmsis_nn_dims *filter_dims,
                                          const int8_t *kernel,
                                          const cmsis_nn_dims *bias_dims,
                                          const int32_t *bias,
                                          const cmsis_nn_dims *output_dims,
                                          int8_t *output);

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
                                           int8_t *output_data);

/*
 * s8 average pooling, TFLite semantics (signature as in CMSIS-NN v6.0.0 and v7.0.0).
 *
 *   ctx           scratch of arm_avgpool_s8_get_buffer_size() bytes (with the DSP extension
 *                 ctx->buf must not be NULL)
 *   pool_params   stride, padding (top/left; bottom/right implied by output_dims), activation
 *   input_dims    [N, H, W, C], input_data NHWC int8
 *   filter_dims   [?, HK, WK, ?]: the window
 *   output_dims   [N, H_OUT, W_OUT, C], output_data NHWC int8 (must not overlap the input)
 *
 *   out[n][y][x][c] = clamp(round(sum / count), act.min, act.max) over the count window pixels
 *   inside the input (padding is not counted), halves rounded away from zero:
 *   (sum > 0 ? sum + count / 2 : sum - count / 2) / count in C.
 *
 * Returns ARM_CMSIS_NN_ARG_ERROR when N < 1, a window covers no pixel, or the buffer is
 * missing, else ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_avgpool_s8(const cmsis_nn_context *ctx,
                                   const cmsis_nn_pool_params *pool_params,
                                   const cmsis_nn_dims *input_dims,
                                   const int8_t *input_data,
                                   const cmsis_nn_dims *filter_dims,
                                   const cmsis_nn_dims *output_dims,
                                   int8_t *output_data);

/* Scratch bytes arm_avgpool_s8() needs: ch_src * sizeof(int32_t) with the DSP extension, else 0. */
int32_t arm_avgpool_s8_get_buffer_size(const int dim_dst_width, const int ch_src);

/*
 * s8 max pooling, TFLite semantics: the largest window pixel inside the input, clamped.
 * Arguments as arm_avgpool_s8(); ctx is unused. Returns ARM_CMSIS_NN_ARG_ERROR when N < 1.
 */
arm_cmsis_nn_status arm_max_pool_s8(const cmsis_nn_context *ctx,
                                    const cmsis_nn_pool_params *pool_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int8_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int8_t *output_data);

/*
 * s8 elementwise add of two vectors of block_size values, TFLite semantics:
 *
 *   a = requantize((in1 + input_1_offset) << left_shift, input_1_mult, input_1_shift)
 *   b = requantize((in2 + input_2_offset) << left_shift, input_2_mult, input_2_shift)
 *   out = clamp(requantize(a + b, out_mult, out_shift) + out_offset, act_min, act_max)
 *
 * offsets in [-127, 128] (inputs) and [-128, 127] (output). Returns ARM_CMSIS_NN_SUCCESS.
 */
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
                                           const int32_t block_size);

/*
 * s8 elementwise multiply of two vectors of block_size values, TFLite semantics:
 *
 *   out = clamp(requantize((in1 + input_1_offset) * (in2 + input_2_offset), out_mult, out_shift)
 *               + out_offset, out_activation_min, out_activation_max)
 *
 * offsets in [-127, 128] (inputs) and [-128, 127] (output). Returns ARM_CMSIS_NN_SUCCESS.
 */
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
                                           const int32_t block_size);

/*
 * s8 softmax over num_rows rows of row_size values, TFLite micro's bit-exact algorithm:
 * mult/shift scale (x - row max) to Q5.26 (shift in [0, 31]), values below diff_min give
 * exp 0; the output has scale 1/256 and zero point -128.
 */
void arm_softmax_s8(const int8_t *input,
                    const int32_t num_rows,
                    const int32_t row_size,
                    const int32_t mult,
                    const int32_t shift,
                    const int32_t diff_min,
                    int8_t *output);

/*
 * arm_softmax_s8 with an int16 output: scale 1/65536, zero point -32768 (TFLite's int8 -> int16
 * softmax), values below diff_min -32768.
 */
void arm_softmax_s8_s16(const int8_t *input,
                        const int32_t num_rows,
                        const int32_t row_size,
                        const int32_t mult,
                        const int32_t shift,
                        const int32_t diff_min,
                        int16_t *output);

/*
 * TFLite's int16 Logistic (type ARM_SIGMOID) or Tanh (ARM_TANH) of size values: each input times
 * 3 << left_shift (or times 3 with a rounding right shift by -left_shift: an input scale of
 * 2^(left_shift - 12)) interpolated in TFLite's table of sigmoid(k / 24); output Q0.15. Returns
 * ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_nn_activation_s16(const int16_t *input,
                                          int16_t *output,
                                          const int32_t size,
                                          const int32_t left_shift,
                                          const arm_nn_activation_type type);

/*
 * s16 softmax over num_rows rows of row_size values, TFLite's int16 algorithm (zero points 0,
 * output scale 1/32768): mult/shift (arm_nn_requantize) scale (x - row max) so that [-65535, 0]
 * is [-10, 0]; exp and the reciprocal of the row's sum come from softmax_params' two 513-entry
 * tables, interpolated over the low 7 bits of the index. Returns ARM_CMSIS_NN_ARG_ERROR if a
 * table is NULL, else ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_softmax_s16(const int16_t *input,
                                    const int32_t num_rows,
                                    const int32_t row_size,
                                    const int32_t mult,
                                    const int32_t shift,
                                    const cmsis_nn_softmax_lut_s16 *softmax_params,
                                    int16_t *output);

/*
 * int16 activations, int8 weights ("16x8", CMSIS-NN v7.0.0's s16 functions), TFLite semantics.
 * Zero points are 0: the layers' input_offset and output_offset are not read (nor by v7.0.0),
 * the filter is symmetric. With an int64 bias the sums are exact (int64; with the DSP
 * extension int32 sums of at most 508 products, which cannot overflow, added into int64) and
 * requantized by arm_nn_requantize_s64 with REDUCE_MULTIPLIER(multiplier):
 *
 *   out = clamp(requantize_s64(bias + sum in * filter, REDUCE_MULTIPLIER(mult), shift),
 *               act.min, act.max)
 *
 * shift in [-49, 14]; act within int16. This is TFLite's reference wherever the requantized
 * value is within +-2^30 (see arm_nn_requantize_s64). v7.0.0 itself sums up to 512 products
 * in an int32 before going on in int64 (a convolution's odd last pixel all of them), so it
 * differs from these exact sums where those int32 sums overflow (512 products of 2^22:
 * -32768 * -128).
 */

/*
 * s16 convolution: arm_convolve_s8's layout and geometry (stride, padding, dilation; no
 * groups, no upscale), int16 input and output.
 *
 *   ctx        scratch of arm_convolve_s16_get_buffer_size() bytes; ctx->buf must not be NULL
 *   bias_data  not NULL; bias_data->data NULL (no bias), or int64 [C_OUT] (is_int32_bias
 *              false: the exact sum above), or int32 [C_OUT] (is_int32_bias true: as v7.0.0,
 *              the sum and bias taken modulo 2^32 and requantized by arm_nn_requantize with
 *              the full multiplier)
 *
 * Returns ARM_CMSIS_NN_ARG_ERROR when ctx->buf is NULL, else ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_convolve_s16(const cmsis_nn_context *ctx,
                                     const cmsis_nn_conv_params *conv_params,
                                     const cmsis_nn_per_channel_quant_params *quant_params,
                                     const cmsis_nn_dims *input_dims,
                                     const int16_t *input_data,
                                     const cmsis_nn_dims *filter_dims,
                                     const int8_t *filter_data,
                                     const cmsis_nn_dims *bias_dims,
                                     const cmsis_nn_bias_data *bias_data,
                                     const cmsis_nn_dims *output_dims,
                                     int16_t *output_data);

/* Scratch bytes arm_convolve_s16() needs: two int16 columns of the taps (v7.0.0's size
   without Helium), 2 * filter_dims->w * filter_dims->h * input_dims->c * sizeof(int16_t). */
int32_t arm_convolve_s16_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims);

/*
 * s16 depthwise convolution: arm_depthwise_conv_s8's layout and geometry (ch_mult >= 1,
 * stride, padding, dilation), int16 input and output, bias_data int64 [C_OUT] or NULL; ctx
 * is not used. Returns ARM_CMSIS_NN_ARG_ERROR when C_OUT != C_IN * ch_mult (v7.0.0 does not
 * check), else ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_depthwise_conv_s16(const cmsis_nn_context *ctx,
                                           const cmsis_nn_dw_conv_params *dw_conv_params,
                                           const cmsis_nn_per_channel_quant_params *quant_params,
                                           const cmsis_nn_dims *input_dims,
                                           const int16_t *input_data,
                                           const cmsis_nn_dims *filter_dims,
                                           const int8_t *filter_data,
                                           const cmsis_nn_dims *bias_dims,
                                           const int64_t *bias_data,
                                           const cmsis_nn_dims *output_dims,
                                           int16_t *output_data);

/*
 * s16 fully connected layer: arm_fully_connected_s8's layout (filter [OUTPUT_DEPTH][ACCUM_DEPTH],
 * filter_dims->n the accumulation depth, output_dims->c the output depth, input_dims->n
 * batches), int16 input and output, per-tensor multiplier and shift, bias_data int64
 * [OUTPUT_DEPTH] or NULL; the offsets are not read, ctx is not used. Returns ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_fully_connected_s16(const cmsis_nn_context *ctx,
                                            const cmsis_nn_fc_params *fc_params,
                                            const cmsis_nn_per_tensor_quant_params *quant_params,
                                            const cmsis_nn_dims *input_dims,
                                            const int16_t *input_data,
                                            const cmsis_nn_dims *filter_dims,
                                            const int8_t *filter_data,
                                            const cmsis_nn_dims *bias_dims,
                                            const int64_t *bias_data,
                                            const cmsis_nn_dims *output_dims,
                                            int16_t *output_data);

/* Scratch bytes arm_fully_connected_s16() needs: 0. */
int32_t arm_fully_connected_s16_get_buffer_size(const cmsis_nn_dims *filter_dims);

/*
 * s16 average pooling: arm_avgpool_s8's arguments and arithmetic on int16 (the window's sum
 * over its pixels inside the input divided by their count, halves away from zero, clamped).
 * ctx: arm_avgpool_s16_get_buffer_size() bytes, not NULL with the DSP extension. Returns
 * ARM_CMSIS_NN_ARG_ERROR when N < 1, a window covers no pixel, or the buffer is missing.
 */
arm_cmsis_nn_status arm_avgpool_s16(const cmsis_nn_context *ctx,
                                    const cmsis_nn_pool_params *pool_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int16_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int16_t *output_data);

/* Scratch bytes arm_avgpool_s16() needs: ch_src * sizeof(int32_t) with the DSP extension, else 0
   (v7.0.0's). */
int32_t arm_avgpool_s16_get_buffer_size(const int dim_dst_width, const int ch_src);

/*
 * s16 max pooling: the largest window pixel inside the input, clamped (int16 src / dst,
 * arguments as arm_max_pool_s8; ctx is unused). Returns ARM_CMSIS_NN_ARG_ERROR when N < 1.
 */
arm_cmsis_nn_status arm_max_pool_s16(const cmsis_nn_context *ctx,
                                     const cmsis_nn_pool_params *pool_params,
                                     const cmsis_nn_dims *input_dims,
                                     const int16_t *src,
                                     const cmsis_nn_dims *filter_dims,
                                     const cmsis_nn_dims *output_dims,
                                     int16_t *dst);

/*
 * s16 elementwise add of two vectors of block_size values (v7.0.0's arithmetic; the three
 * offsets are not read):
 *
 *   a = requantize(in1 << left_shift, input_1_mult, input_1_shift)
 *   b = requantize(in2 << left_shift, input_2_mult, input_2_shift)
 *   out = clamp(requantize(a + b, out_mult, out_shift), out_activation_min, out_activation_max)
 *
 * with arm_nn_requantize, the shifts and the sum modulo 2^32. Returns ARM_CMSIS_NN_SUCCESS.
 */
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
                                            const int32_t block_size);

/*
 * s16 elementwise multiply of two vectors of block_size values (TFLite's int16 MUL; the three
 * offsets are 0 in the 16x8 scheme and not read):
 *
 *   out = clamp(requantize(in1 * in2, out_mult, out_shift), out_activation_min, out_activation_max)
 *
 * with arm_nn_requantize (the product of two int16 is at most 2^30). Returns ARM_CMSIS_NN_SUCCESS.
 */
arm_cmsis_nn_status arm_elementwise_mul_s16(const int16_t *input_1_vect,
                                            const int16_t *input_2_vect,
                                            const int32_t input_1_offset,
                                            const int32_t input_2_offset,
                                            int16_t *output,
                                            const int32_t out_offset,
                                            const int32_t out_mult,
                                            const int32_t out_shift,
                                            const int32_t out_activation_min,
                                            const int32_t out_activation_max,
                                            const int32_t block_size);

#ifdef __cplusplus
}
#endif

#endif /* SHIM_NNFUNCTIONS_H */
