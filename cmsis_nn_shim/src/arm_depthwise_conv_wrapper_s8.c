/*
 * arm_depthwise_conv_wrapper_s8 (cmsis_nn_shim): the s8 depthwise convolution TFLite Micro and
 * microTVM call. It picks a form from the shapes as CMSIS-NN v7.0.0 documents and does for a
 * core without Helium:
 *
 *   ch_mult == 1, N == 1, dilation 1x1:
 *       3x3 filter, padding.h <= 1 and padding.w <= 1  -> arm_depthwise_conv_3x3_s8
 *       else                                           -> arm_depthwise_conv_s8_opt
 *   else                                               -> arm_depthwise_conv_s8
 *
 * Scratch: arm_depthwise_conv_wrapper_s8_get_buffer_size, the size of the form it picks (below).
 * The two fast forms check their arguments as CMSIS-NN's do and
 * compute arm_depthwise_conv_s8's results with its code (whose DSP path for ch_mult 1 already
 * takes four channels at a time). Where CMSIS-NN v7.0.0's 3x3 form is not exact (a window whose
 * middle column lies right of the input: more than one column of right padding) the shim's
 * still is; capture does not call the wrapper there (specializer/capture/cmsis_calls.py).
 */
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"

/* The forms and the wrapper are inlined where they are called (clang: libjit; see shim_conv_forms.h). */
#if defined(__clang__)
#define SHIM_DW_DISPATCH __attribute__((always_inline))
#else
#define SHIM_DW_DISPATCH
#endif

/* arm_depthwise_conv_s8's code inlined into the forms, so LLVM's function specialization can copy
   a form per call (see arm_convolve_1x1_s8.c). */
#define SHIM_DEPTHWISE_S8 shim_depthwise_in_form
#define SHIM_DEPTHWISE_S8_STORAGE static inline __attribute__((always_inline))
#include "arm_depthwise_conv_s8.c"

/* CMSIS-NN's 3x3 form: C_IN == C_OUT, a 3x3 filter, padding.w <= 1 (the wrapper also keeps
   padding.h <= 1); arm_depthwise_conv_s8's code. */
SHIM_DW_DISPATCH arm_cmsis_nn_status arm_depthwise_conv_3x3_s8(const cmsis_nn_context *ctx,
                                              const cmsis_nn_dw_conv_params *dw_conv_params,
                                              const cmsis_nn_per_channel_quant_params *quant_params,
                                              const cmsis_nn_dims *input_dims,
                                              const int8_t *input_data,
                                              const cmsis_nn_dims *filter_dims,
                                              const int8_t *filter_data,
                                              const cmsis_nn_dims *bias_dims,
                                              const int32_t *bias_data,
                                              const cmsis_nn_dims *output_dims,
                                              int8_t *output_data)
{
    if (input_dims->c != output_dims->c || dw_conv_params->padding.w > 1 || filter_dims->w != 3 ||
        filter_dims->h != 3) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return shim_depthwise_in_form(ctx, dw_conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                                 bias_dims, bias_data, output_dims, output_data);
}

/* CMSIS-NN's _opt form: C_IN == C_OUT, and ctx->buf unless its buffer size is 0 (the shim's
   code uses none); arm_depthwise_conv_s8's code. */
SHIM_DW_DISPATCH arm_cmsis_nn_status arm_depthwise_conv_s8_opt(const cmsis_nn_context *ctx,
                                              const cmsis_nn_dw_conv_params *dw_conv_params,
                                              const cmsis_nn_per_channel_quant_params *quant_params,
                                              const cmsis_nn_dims *input_dims,
                                              const int8_t *input_data,
                                              const cmsis_nn_dims *filter_dims,
                                              const int8_t *filter_data,
                                              const cmsis_nn_dims *bias_dims,
                                              const int32_t *bias_data,
                                              const cmsis_nn_dims *output_dims,
                                              int8_t *output_data)
{
    if (input_dims->c != output_dims->c) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (ctx->buf == NULL && arm_depthwise_conv_s8_opt_get_buffer_size(input_dims, filter_dims) > 0) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return shim_depthwise_in_form(ctx, dw_conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                                 bias_dims, bias_data, output_dims, output_data);
}

SHIM_DW_DISPATCH arm_cmsis_nn_status arm_depthwise_conv_wrapper_s8(const cmsis_nn_context *ctx,
                                                  const cmsis_nn_dw_conv_params *dw_conv_params,
                                                  const cmsis_nn_per_channel_quant_params *quant_params,
                                                  const cmsis_nn_dims *input_dims,
                                                  const int8_t *input_data,
                                                  const cmsis_nn_dims *filter_dims,
                                                  const int8_t *filter_data,
                                                  const cmsis_nn_dims *bias_dims,
                                                  const int32_t *bias_data,
                                                  const cmsis_nn_dims *output_dims,
                                                  int8_t *output_data)
{
    const cmsis_nn_dw_conv_params *p = dw_conv_params;
    if (p->ch_mult == 1 && input_dims->n == 1 && p->dilation.w == 1 && p->dilation.h == 1) {
        if (filter_dims->w == 3 && filter_dims->h == 3 && p->padding.h <= 1 && p->padding.w <= 1) {
            return arm_depthwise_conv_3x3_s8(ctx, dw_conv_params, quant_params, input_dims, input_data, filter_dims,
                                             filter_data, bias_dims, bias_data, output_dims, output_data);
        }
        return arm_depthwise_conv_s8_opt(ctx, dw_conv_params, quant_params, input_dims, input_data, filter_dims,
                                         filter_data, bias_dims, bias_data, output_dims, output_data);
    }
    return arm_depthwise_conv_s8(ctx, dw_conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                                 bias_dims, bias_data, output_dims, output_data);
}

/* Scratch bytes arm_depthwise_conv_s8_opt needs with the DSP extension: one int16 column of
   C_IN x KH x KW (CMSIS-NN's im2col of a window); none without it. */
int32_t arm_depthwise_conv_s8_opt_get_buffer_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
#if defined(ARM_MATH_DSP)
    return input_dims->c * filter_dims->w * filter_dims->h * (int32_t)sizeof(int16_t);
#else
    (void)input_dims;
    (void)filter_dims;
    return 0;
#endif
}

/* The size of the form the wrapper picks for a core with the DSP extension, as CMSIS-NN v7.0.0
   computes it (it tests C_IN == C_OUT where the wrapper tests ch_mult == 1). */
int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                          const cmsis_nn_dims *input_dims,
                                                          const cmsis_nn_dims *filter_dims,
                                                          const cmsis_nn_dims *output_dims)
{
    const cmsis_nn_dw_conv_params *p = dw_conv_params;
    if (input_dims->c == output_dims->c && input_dims->n == 1 && p->dilation.w == 1 && p->dilation.h == 1) {
        if (filter_dims->w == 3 && filter_dims->h == 3 && p->padding.h <= 1 && p->padding.w <= 1) {
            return 0;
        }
        return input_dims->c * filter_dims->w * filter_dims->h * (int32_t)sizeof(int16_t);
    }
    return 0;
}

/* The scratch arm_depthwise_conv_wrapper_s8 needs on this core. */
int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                      const cmsis_nn_dims *input_dims,
                                                      const cmsis_nn_dims *filter_dims,
                                                      const cmsis_nn_dims *output_dims)
{
    const cmsis_nn_dw_conv_params *p = dw_conv_params;
    if (input_dims->c == output_dims->c && input_dims->n == 1 && p->dilation.w == 1 && p->dilation.h == 1) {
        if (filter_dims->w == 3 && filter_dims->h == 3 && p->padding.h <= 1 && p->padding.w <= 1) {
            return 0;
        }
        return arm_depthwise_conv_s8_opt_get_buffer_size(input_dims, filter_dims);
    }
    return 0;
}
