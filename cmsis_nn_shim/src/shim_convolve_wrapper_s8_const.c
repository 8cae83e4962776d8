/*
 * shim_convolve_wrapper_s8_const (cmsis_nn_shim, not a CMSIS-NN function):
 * arm_convolve_wrapper_s8 with the same signature, dispatch and results, for the all-args
 * build (specializer/optimize/relayout.py calls it where the quant params and the bias are
 * constant globals). It picks the same forms; the general one (and the 1xN form, which is the
 * general one with the DSP extension) is shim_convolve_s8_const, its output-channel loop fully
 * unrolled; the 1x1 forms are CMSIS-NN's names (see shim_conv_forms.h). Once specialization
 * has made the shapes constant the choice folds away (the clone is a branch to the form).
 */
#define SHIM_CONV_CONST
#include "arm_convolve_wrapper_s8.c"
