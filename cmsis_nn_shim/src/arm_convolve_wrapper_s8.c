/*
 * arm_convolve_wrapper_s8 (cmsis_nn_shim): the s8 convolution TFLite Micro and microTVM call.
 * It picks a form from the shapes as CMSIS-NN v7.0.0 documents and does (no Helium):
 *
 *   1x1 filter, no padding, dilation 1, C_IN == filter C (not grouped):
 *       stride 1x1             -> arm_convolve_1x1_s8_fast
 *       any other stride       -> arm_convolve_1x1_s8
 *   else input H == 1, filter H == 1, dilation.w == 1, (stride.w * C_IN) % 4 == 0, not grouped
 *                              -> arm_convolve_1_x_n_s8 (with the DSP extension: arm_convolve_s8)
 *   else                       -> arm_convolve_s8 (upscale_dims NULL)
 *
 * Every form gives arm_convolve_s8's results. Scratch: arm_convolve_wrapper_s8_get_buffer_size,
 * the size of the form it picks (below). Also arm_convolve_1_x_n_s8 and the buffer-size
 * functions of the family. shim_convolve_wrapper_s8_const.c compiles this file again as the
 * all-args copy (shim_conv_forms.h).
 */
#include "shim_conv_forms.h"
#include "shim_nnsupportfunctions.h"

SHIM_DISPATCH SHIM_CONV_FORM(SHIM_CONV_1XN)
{
    /* CMSIS-NN's argument checks; the DSP form is the general convolution */
    if (input_dims->h != 1 || conv_params->dilation.w != 1 || ctx->buf == NULL || conv_params->stride.w == 0 ||
        (conv_params->stride.w * input_dims->c) % 4 != 0) {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    return SHIM_CONV_GENERIC(ctx, conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                             bias_dims, bias_data, NULL, output_dims, output_data);
}

/* The 1x1 forms as the wrapper runs them: the general form gives the same results, with its
   two im2col columns on the stack (the 1x1 forms have no scratch). It is faster than the 1x1
   forms' widening of every input word: kws_int8 all-args (the unrolled copy), each 64x64
   pointwise conv 1.11 M -> 1.01 M est. cycles; separate 1.72 M -> 1.62 M; for 2 x 64 int16 of
   stack. Inputs deeper than 256 channels take the 1x1 forms. */
#define SHIM_1X1_STACK_DEPTH 256
static inline SHIM_DISPATCH arm_cmsis_nn_status conv_1x1_on_stack(const cmsis_nn_context *ctx, const cmsis_nn_conv_params *conv_params,
                                             const cmsis_nn_per_channel_quant_params *quant_params,
                                             const cmsis_nn_dims *input_dims, const int8_t *input_data,
                                             const cmsis_nn_dims *filter_dims, const int8_t *filter_data,
                                             const cmsis_nn_dims *bias_dims, const int32_t *bias_data,
                                             const cmsis_nn_dims *output_dims, int8_t *output_data)
{
    (void)ctx;
    const int32_t depth = (input_dims->c + 3) & ~3;
    int16_t cols[2 * depth];
    const cmsis_nn_context own = {cols, (int32_t)sizeof cols};
    return SHIM_CONV_GENERIC(&own, conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                             bias_dims, bias_data, NULL, output_dims, output_data);
}

SHIM_DISPATCH SHIM_CONV_FORM(SHIM_CONV_WRAPPER)
{
    const cmsis_nn_conv_params *p = conv_params;
    if (p->padding.w == 0 && p->padding.h == 0 && filter_dims->w == 1 && filter_dims->h == 1 && p->dilation.w == 1 &&
        p->dilation.h == 1 && input_dims->c == filter_dims->c) {
        if (input_dims->c <= SHIM_1X1_STACK_DEPTH) {
            return conv_1x1_on_stack(ctx, conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                                     bias_dims, bias_data, output_dims, output_data);
        }
        if (p->stride.w == 1 && p->stride.h == 1) {
            return SHIM_CONV_1X1_FAST(ctx, conv_params, quant_params, input_dims, input_data, filter_dims,
                                      filter_data, bias_dims, bias_data, output_dims, output_data);
        }
        return SHIM_CONV_1X1(ctx, conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                             bias_dims, bias_data, output_dims, output_data);
    }
    if (input_dims->h == 1 && p->dilation.w == 1 && filter_dims->h == 1 && (p->stride.w * input_dims->c) % 4 == 0 &&
        input_dims->c == filter_dims->c) {
        return SHIM_CONV_1XN(ctx, conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                             bias_dims, bias_data, output_dims, output_data);
    }
    return SHIM_CONV_GENERIC(ctx, conv_params, quant_params, input_dims, input_data, filter_dims, filter_data,
                             bias_dims, bias_data, NULL, output_dims, output_data);
}

#ifndef SHIM_CONV_CONST
/* Scratch bytes arm_convolve_1_x_n_s8 needs without Helium: arm_convolve_s8's. */
int32_t arm_convolve_1_x_n_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                              const cmsis_nn_dims *input_dims,
                                              const cmsis_nn_dims *filter_dims,
                                              const cmsis_nn_dims *output_dims)
{
    (void)conv_params;
    (void)output_dims;
    return arm_convolve_s8_get_buffer_size(input_dims, filter_dims);
}

/* The size of the form the wrapper picks, as CMSIS-NN v7.0.0 computes it for a core with the
   DSP extension. As there, the 1x1 test does not look at C_IN == filter C (CMSIS-NN after
   v7.0.0 does): a grouped 1x1 convolution gets 0 here and needs arm_convolve_s8's scratch. */
int32_t arm_convolve_wrapper_s8_get_buffer_size_dsp(const cmsis_nn_conv_params *conv_params,
                                                    const cmsis_nn_dims *input_dims,
                                                    const cmsis_nn_dims *filter_dims,
                                                    const cmsis_nn_dims *output_dims)
{
    const cmsis_nn_conv_params *p = conv_params;
    if (p->padding.w == 0 && p->padding.h == 0 && filter_dims->w == 1 && filter_dims->h == 1 && p->dilation.w == 1 &&
        p->dilation.h == 1) {
        if (p->stride.w == 1 && p->stride.h == 1) {
#if defined(__ARMCC_VERSION) && (__ARMCC_VERSION >= 6010050)
            return 2 * input_dims->c * (int32_t)sizeof(int16_t);
#else
            return 0;
#endif
        }
        return 0;
    }
    if (input_dims->h == 1 && p->dilation.w == 1 && filter_dims->h == 1 && (p->stride.w * input_dims->c) % 4 == 0) {
        return arm_convolve_1_x_n_s8_get_buffer_size(conv_params, input_dims, filter_dims, output_dims);
    }
    return arm_convolve_s8_get_buffer_size(input_dims, filter_dims);
}

/* The scratch arm_convolve_wrapper_s8 needs on this core: without the DSP extension the same
   choice with arm_convolve_1x1_s8_fast's size. */
int32_t arm_convolve_wrapper_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                                const cmsis_nn_dims *input_dims,
                                                const cmsis_nn_dims *filter_dims,
                                                const cmsis_nn_dims *output_dims)
{
#if defined(ARM_MATH_DSP)
    return arm_convolve_wrapper_s8_get_buffer_size_dsp(conv_params, input_dims, filter_dims, output_dims);
#else
    const cmsis_nn_conv_params *p = conv_params;
    if (p->padding.w == 0 && p->padding.h == 0 && filter_dims->w == 1 && filter_dims->h == 1 && p->dilation.w == 1 &&
        p->dilation.h == 1) {
        return p->stride.w == 1 && p->stride.h == 1 ? arm_convolve_1x1_s8_fast_get_buffer_size(input_dims) : 0;
    }
    if (input_dims->h == 1 && p->dilation.w == 1 && filter_dims->h == 1 && (p->stride.w * input_dims->c) % 4 == 0) {
        return arm_convolve_1_x_n_s8_get_buffer_size(conv_params, input_dims, filter_dims, output_dims);
    }
    return arm_convolve_s8_get_buffer_size(input_dims, filter_dims);
#endif
}
#endif
