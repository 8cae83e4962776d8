/*
 * shim_conv_forms.h (cmsis_nn_shim, private to src/) -- which function each name of the
 * convolution wrapper's family is in one translation unit.
 *
 * arm_convolve_wrapper_s8.c is compiled twice: as itself (the CMSIS-NN names) and, from
 * shim_convolve_wrapper_s8_const.c with SHIM_CONV_CONST defined, as the all-args build's copy
 * (shim_convolve_wrapper_s8_const, which hands the general form to shim_convolve_s8_const,
 * whose output-channel loop is fully unrolled; see there).
 */
#ifndef SHIM_CONV_FORMS_H
#define SHIM_CONV_FORMS_H

#include "shim_nnfunctions.h"

/* The 1x1 forms have no copy: their output-channel loop is the outer one, so a channel's
   multiplier, shift and bias are loaded once for all its pixels; unrolled (as the general form
   is) they took 78 KB per kws_int8 pointwise conv and were not faster. */
#define SHIM_CONV_1X1_FAST arm_convolve_1x1_s8_fast
#define SHIM_CONV_1X1 arm_convolve_1x1_s8
#ifdef SHIM_CONV_CONST
#define SHIM_CONV_WRAPPER shim_convolve_wrapper_s8_const
#define SHIM_CONV_GENERIC shim_convolve_s8_const
#define SHIM_CONV_1XN shim_convolve_1_x_n_s8_const
#else
#define SHIM_CONV_WRAPPER arm_convolve_wrapper_s8
#define SHIM_CONV_GENERIC arm_convolve_s8
#define SHIM_CONV_1XN arm_convolve_1_x_n_s8
#endif

/* The wrappers and the small forms that only check and hand on are inlined where they are
   called (libjit is built by clang; a host build by gcc, where an exported always_inline
   function in a shared library is an error, inlines as it likes: the same results). */
#if defined(__clang__)
#define SHIM_DISPATCH __attribute__((always_inline))
#else
#define SHIM_DISPATCH
#endif

/* The layer signature every form shares (arm_convolve_wrapper_s8's). */
#define SHIM_CONV_FORM(name)                                                                                          \
    arm_cmsis_nn_status name(const cmsis_nn_context *ctx, const cmsis_nn_conv_params *conv_params,                  \
                             const cmsis_nn_per_channel_quant_params *quant_params, const cmsis_nn_dims *input_dims, \
                             const int8_t *input_data, const cmsis_nn_dims *filter_dims, const int8_t *filter_data,  \
                             const cmsis_nn_dims *bias_dims, const int32_t *bias_data,                               \
                             const cmsis_nn_dims *output_dims, int8_t *output_data)

/* the all-args copies (not CMSIS-NN functions) */
arm_cmsis_nn_status shim_convolve_s8_const(const cmsis_nn_context *ctx,
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
SHIM_CONV_FORM(shim_convolve_wrapper_s8_const);
SHIM_CONV_FORM(shim_convolve_1_x_n_s8_const);

#endif /* SHIM_CONV_FORMS_H */
