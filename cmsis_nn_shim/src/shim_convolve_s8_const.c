/*
 * shim_convolve_s8_const (cmsis_nn_shim, not a CMSIS-NN function): arm_convolve_s8 with the same
 * signature and results, its output-channel loop fully unrolled when the channel count is a
 * constant. The all-args variant calls it instead of arm_convolve_s8 when the quant params and
 * the bias are constant globals (specializer/optimize/relayout.py): once unrolled, every channel's
 * multiplier, shift and bias are immediates. Other variants keep arm_convolve_s8, where the
 * unrolled copies would only add code. A count, not unroll(full): LLVM warns on stderr about a
 * full unroll it cannot do (this generic copy), never about a count; 32 channel pairs cover
 * 64 output channels whole.
 */
#define SHIM_CONVOLVE_S8 shim_convolve_s8_const
#define SHIM_CONVOLVE_S8_VARIANT
#if defined(__clang__) /* gcc builds the shim for the host tests */
#define SHIM_CHANNEL_LOOP _Pragma("clang loop unroll_count(32)")
#endif
#include "arm_convolve_s8.c"
