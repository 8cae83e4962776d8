"""A cheaper requantization with CMSIS-NN's results, for a channel whose constants allow it.

arm_nn_requantize (default, double rounding) takes 15-20 instructions per output: a 64-bit
multiply-add, reassembling bit 31 up, then a rounding division by 2^rs with a mask, a threshold
and a sign test. For shift = -rs <= -1 the same value is

    t = (2*acc * m + 2^31) >> 32                       SMMULR of the doubled accumulator
    out = (t + (acc >> 31) + K) >> rs                  K = 2^(rs-1) + out_offset * 2^rs

because (2*acc*m + 2^31) >> 32 == (acc*m + 2^30) >> 31, and the division's ties-away-from-zero
rounding adds 2^(rs-1) for t >= 0 and 2^(rs-1) - 1 for t < 0 before flooring; the output offset,
a multiple of 2^rs, goes into the same constant. The sign step reads the accumulator's sign, not t's: with m >= 0
they differ only where t = 0 > acc, and there (K - 1) >> rs == K >> rs (rs >= 1), so the kernel
needs one SMMLAR (t + K) and no second multiply for t's sign. The kernel gets 2*acc for free by reading
doubled weights and bias. Valid while 2*acc stays an int32 and t + K cannot overflow: `fast_form`
checks both over every accumulator value the channel can produce (an interval computed from its
weights and the int8 input range) and returns None where they do not hold, or where the shift is
not negative; the call then keeps arm_nn_requantize.

The sign step only matters for t < 0, where it lowers the output by at most one; there
(t + K) >> rs is at most out_offset (K = 2^(rs-1) + out_offset * 2^rs, t <= -1), so when the
clamp's lower bound is out_offset or above (a fused ReLU) both land on act_min and the kernels
leave the step out (`sign_step_needed`).

`constant_output` finds the channels whose output is one value for every input: arm_nn_requantize
is monotone in the accumulator for a non-negative multiplier and no left shift (a rounding
multiply, then a rounding division), and so is the clamp after it, so equal outputs at both ends
of the interval prove the output constant. (Trained networks have such channels: in MLPerf Tiny's
VWW model the largest shifts, 2^-25 and below, belong to them.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Fast:
    bias2: int  # 2 * bias
    multiplier: int
    k: int  # 2^(rs-1) + out_offset * 2^rs
    rs: int


def reference(acc: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """arm_nn_requantize (default rounding) for shift <= 0, on int64 values (no overflow here)."""
    rs = -shift
    t = (acc.astype(np.int64) * multiplier + (1 << 30)) >> 31  # arm_nn_doubling_high_mult_no_sat
    mask = (1 << rs) - 1  # arm_nn_divide_by_power_of_two: halves away from zero
    result = t >> rs
    threshold = (mask >> 1) + (result < 0)
    return result + ((t & mask) > threshold)


def fast_form(multiplier: int, shift: int, bias: int, out_offset: int, acc_lo: int, acc_hi: int) -> Fast | None:
    """The fast form's constants for out_offset + requantize(acc + bias), acc in [acc_lo, acc_hi]."""
    rs = -shift
    if not 1 <= rs <= 30 or not 0 <= multiplier < 1 << 31:
        return None
    lo, hi = 2 * (acc_lo + bias), 2 * (acc_hi + bias)
    if lo < -(1 << 31) or hi >= 1 << 31:
        return None
    k = (1 << (rs - 1)) + out_offset * (1 << rs)
    t_lo, t_hi = (lo * multiplier + (1 << 31)) >> 32, (hi * multiplier + (1 << 31)) >> 32  # t is monotonic
    if min(t_lo - 1 + k, t_lo + k) < -(1 << 31) or t_hi + k >= 1 << 31:
        return None
    return Fast(2 * bias, multiplier, k, rs)


def evaluate(acc: np.ndarray, form: Fast, sign_step: bool = True) -> np.ndarray:
    """The fast form as the kernel computes it, on an accumulator without the bias."""
    a2 = 2 * acc.astype(np.int64) + form.bias2
    t = (a2 * form.multiplier + (1 << 31)) >> 32
    return (t + ((a2 >> 63) if sign_step else 0) + form.k) >> form.rs


def sign_step_needed(out_offset: int, act: tuple[int, int]) -> bool:
    """Whether the fast form needs its sign step under this clamp (module docstring)."""
    return act[0] < out_offset


def constant_output(multiplier: int, shift: int, bias: int, out_offset: int, act: tuple[int, int], acc_lo: int,
                    acc_hi: int) -> int | None:
    """The one value of clamp(out_offset + requantize(acc + bias)) over acc in [acc_lo, acc_hi],
    if it is one (module docstring), else None."""
    lo, hi = acc_lo + bias, acc_hi + bias
    if shift > 0 or multiplier < 0 or lo < -(1 << 31) or hi >= 1 << 31:
        return None
    ends = np.clip(reference(np.array([lo, hi], np.int64), multiplier, shift) + out_offset, *act)
    return int(ends[0]) if ends[0] == ends[1] else None
