/* The requantization of the all-args int8 kernels (conv_s8.c, dwconv_s8.c): one output value from
 * its accumulator and its channel's record rq (libjit_s8.h). CMSIS-NN's arm_nn_requantize, or
 * (fast) SMMULR of the doubled accumulator and one rounding shift, whose results the compiler
 * proved equal for the channel (specializer/optimize/requant_proof.py); fast == 2 leaves out the
 * sign step of the rounding, which only changes values the clamp takes to act_min anyway (the
 * compiler passes it when act_min >= out_offset). The sign step takes the accumulator's sign, not
 * the product's: the same wherever it matters (requant_proof.py), and SMMLAR then gives t + K in
 * one instruction with no second multiply for t's sign. */
#ifndef LIBJIT_REQUANT_S8_H
#define LIBJIT_REQUANT_S8_H

#include <stdint.h>

#include "libjit_cmsis_nn.h"

static inline int8_t libjit_requant_s8(uint32_t acc, const int32_t *rq, int32_t fast, int32_t out_offset,
                                       int32_t act_min, int32_t act_max)
{
  int32_t v;
  if (fast) {
    const int32_t t = (int32_t)(((int64_t)(int32_t)acc * rq[1] + 0x80000000LL) >> 32);
    v = (t + (fast == 1 ? (int32_t)acc >> 31 : 0) + rq[2]) >> rq[3];
  } else {
    v = arm_nn_requantize((int32_t)acc, rq[1], rq[2]) + out_offset;
  }
  v = v < act_min ? act_min : v;
  v = v > act_max ? act_max : v;
  return (int8_t)v;
}

#endif /* LIBJIT_REQUANT_S8_H */
