/* libjit_add_s8 (see libjit_s8.h): int8 elementwise add for the all-args build, in place of
 * arm_elementwise_add_s8 (specializer/optimize/relayout_add.py writes the arguments).
 *
 * CMSIS-NN's add requantizes each input on its own -- ((x + offset) << left_shift) times its
 * multiplier and shift -- before adding them, so each input's step is a function of its int8
 * value alone: the compiler tabulates both, 256 int32 each (indexed by the value's byte), and the
 * kernel adds two table entries and requantizes the sum as CMSIS-NN does (rq: fast as in
 * requant_s8.h, the tables then doubled), clamps and stores. The same sums, the same outputs. */

#include "libjit_s8.h"

#include "requant_s8.h"

int32_t libjit_add_s8(int8_t *out, const int8_t *a, const int8_t *b, const int32_t *ta, const int32_t *tb,
                      const int32_t *rq, int32_t fast, int32_t out_offset, int32_t act_min, int32_t act_max,
                      int32_t n)
{
  for (int32_t i = 0; i < n; i++) {
    const uint32_t sum = (uint32_t)ta[(uint8_t)a[i]] + (uint32_t)tb[(uint8_t)b[i]];
    out[i] = libjit_requant_s8(sum, rq, fast, out_offset, act_min, act_max);
  }
  return 0; /* CMSIS-NN's ARM_CMSIS_NN_SUCCESS: the call it replaces returns a status */
}
