/* The CMSIS-NN API the libjit kernels call: a real checkout's own headers when the build uses
 * one (specializer/library/libjit.py defines LIBJIT_CMSIS_NN_CHECKOUT), else cmsis_nn_shim's, which
 * declare the same functions and types under their own file names. */
#ifndef LIBJIT_CMSIS_NN_H
#define LIBJIT_CMSIS_NN_H

#ifdef LIBJIT_CMSIS_NN_CHECKOUT
#include "arm_nnfunctions.h"
#include "arm_nnsupportfunctions.h"
#else
#include "shim_nnfunctions.h"
#include "shim_nnsupportfunctions.h"
#endif

#endif /* LIBJIT_CMSIS_NN_H */
