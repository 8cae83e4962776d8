/*
 * shim_nn_math_types.h (cmsis_nn_shim) -- feature macros and limits of CMSIS-NN (v6.0.0 API).
 *
 * ARM_MATH_DSP is defined when the target has the DSP extension (Cortex-M4: yes); the shim's
 * kernels then use the SIMD intrinsics of cmsis_compiler.h, otherwise plain C. There are no
 * Helium (MVE) paths in the shim.
 */
#ifndef SHIM_NN_MATH_TYPES_H
#define SHIM_NN_MATH_TYPES_H

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cmsis_compiler.h"

#if defined(__ARM_FEATURE_DSP) && (__ARM_FEATURE_DSP == 1)
#ifndef ARM_MATH_DSP
#define ARM_MATH_DSP 1
#endif
#endif

#define NN_Q31_MAX ((int32_t)(0x7FFFFFFFL))
#define NN_Q15_MAX ((int16_t)(0x7FFF))
#define NN_Q7_MAX ((int8_t)(0x7F))
#define NN_Q31_MIN ((int32_t)(0x80000000L))
#define NN_Q15_MIN ((int16_t)(0x8000))
#define NN_Q7_MIN ((int8_t)(0x80))

#endif /* SHIM_NN_MATH_TYPES_H */
