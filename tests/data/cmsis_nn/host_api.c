/* Host-side exports for tests/test_cmsis_nn.py: the inline requantization of the shim. */
#include "libjit_cmsis_nn.h"

int32_t shim_requantize(int32_t val, int32_t multiplier, int32_t shift)
{
    return arm_nn_requantize(val, multiplier, shift);
}
