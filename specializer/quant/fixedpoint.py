"""CMSIS-NN's fixed-point arithmetic in JAX, on int32 arrays only.

Each function computes exactly what CMSIS-NN's C helpers (arm_nnsupportfunctions.h, default
build: no single rounding, no inline assembly) compute on a 32-bit Arm core. The 64-bit
products they take are rebuilt from 16-bit halves, so no int64 is needed (JAX runs 32-bit by
default and the target is a 32-bit core); int32 arithmetic wraps, as it does on the core.
Host-side helpers (quantize_multiplier) work on Python numbers.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

I32_MIN = -(1 << 31)
I32_MAX = (1 << 31) - 1


def tflite_round(v: float) -> int:
    """TfLiteRound (std::round): halves away from zero; exact for a float32 widened to double."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: real = multiplier * 2**(shift - 31), multiplier in
    [2**30, 2**31) (0 for real 0); a real below about 2**-31 flushes to (0, 0)."""
    real = float(real)
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"quantize_multiplier: needs a finite real >= 0, got {real}")
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    # std::round: halves away from zero (q > 0 here)
    q_fixed = int(math.floor(q * (1 << 31) + 0.5))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:  # CMSIS-NN's requantize takes shifts in [-31, 30]
        raise ValueError(f"quantize_multiplier: {real} is too large (shift {shift} > 30)")
    return q_fixed, shift


def _u32(x):
    return lax.bitcast_convert_type(x, jnp.uint32)


def _i32(x):
    return lax.bitcast_convert_type(x, jnp.int32)


def _c(v):
    """A constant (Python int or array of them) as int32, two's complement wrapped."""
    return jnp.asarray(np.asarray(v, np.int64).astype(np.uint32).view(np.int32))


def mul64(a, b):
    """Exact signed 64-bit product of int32 arrays as (hi int32, lo uint32)."""
    a = jnp.asarray(a, jnp.int32)
    b = jnp.asarray(b, jnp.int32)
    a_lo, a_hi = a & 0xFFFF, a >> 16   # a = a_hi * 2**16 + a_lo, a_lo in [0, 2**16)
    b_lo, b_hi = b & 0xFFFF, b >> 16
    lo = _u32(a_lo) * _u32(b_lo)       # < 2**32: exact in uint32
    hi = a_hi * b_hi                   # |.| <= 2**30: exact in int32
    for m in (a_hi * b_lo, a_lo * b_hi):  # each fits int32; added times 2**16
        hi, lo = add64(hi, lo, m >> 16, _u32(m << 16))
    return hi, lo


def add64(hi, lo, c_hi, c_lo):
    """(hi, lo) + (c_hi, c_lo) modulo 2**64."""
    new_lo = lo + c_lo
    carry = (new_lo < lo).astype(jnp.int32)
    return hi + c_hi + carry, new_lo


def doubling_high_mult_no_sat(a, b):
    """arm_nn_doubling_high_mult_no_sat: (int32)((a*b + 2**30) >> 31)."""
    hi, lo = mul64(a, b)
    hi, lo = add64(hi, lo, jnp.int32(0), jnp.uint32(1 << 30))
    return (hi << 1) | _i32(lo >> 31)


def doubling_high_mult(a, b):
    """arm_nn_doubling_high_mult (MUL_SAT): nudge +2**30 (or 1 - 2**30 when the signs differ),
    division by 2**31 truncating toward zero, INT32_MIN * INT32_MIN saturating to INT32_MAX."""
    a = jnp.asarray(a, jnp.int32)
    b = jnp.asarray(b, jnp.int32)
    hi, lo = mul64(a, b)
    differ = (a < 0) ^ (b < 0)
    # 1 - 2**30 as a 64-bit pair: hi -1, lo 2**32 - 2**30 + 1
    n_hi = jnp.where(differ, jnp.int32(-1), jnp.int32(0))
    n_lo = jnp.where(differ, jnp.uint32((1 << 32) - (1 << 30) + 1), jnp.uint32(1 << 30))
    hi, lo = add64(hi, lo, n_hi, n_lo)
    floor = (hi << 1) | _i32(lo >> 31)
    inexact = (lo & jnp.uint32(0x7FFFFFFF)) != 0
    result = floor + ((hi < 0) & inexact).astype(jnp.int32)
    return jnp.where((a == b) & (a == I32_MIN), jnp.int32(I32_MAX), result)


def divide_by_power_of_two(x, exponent):
    """arm_nn_divide_by_power_of_two: x / 2**exponent, halves rounded away from zero.
    exponent: static int or per-channel ints in [0, 31] (broadcast against x's last axis)."""
    e = np.asarray(exponent, np.int64)
    if e.size and (e.min() < 0 or e.max() > 31):
        raise ValueError(f"divide_by_power_of_two: exponent out of [0, 31]: {exponent}")
    mask = (np.int64(1) << e) - 1
    x = jnp.asarray(x, jnp.int32)
    remainder = x & _c(mask)
    result = x >> _c(e)
    threshold = _c(mask >> 1) + (result < 0).astype(jnp.int32)
    return result + (remainder > threshold).astype(jnp.int32)


def requantize(x, multiplier, shift):
    """arm_nn_requantize (default rounding): a left shift for positive shifts, the doubling
    high multiply, then a rounding right shift for negative ones. multiplier/shift are static
    ints, or per-channel sequences broadcast against x's last axis."""
    s = np.asarray(shift, np.int64)
    if s.size and (s.min() < -31 or s.max() > 30):
        raise ValueError(f"requantize: shift out of [-31, 30]: {shift}")
    x = jnp.asarray(x, jnp.int32)
    left = np.maximum(s, 0)
    # val * (1 << left) in C: int32 wraps on the core
    scaled = x << _c(left) if left.any() else x
    return divide_by_power_of_two(doubling_high_mult_no_sat(scaled, _c(multiplier)), np.maximum(-s, 0))


def reduced_multiplier(multiplier):
    """CMSIS-NN's REDUCE_MULTIPLIER (TFLite's int64 MultiplyByQuantizedMultiplier): the Q31
    multiplier rounded to Q15, 0x7FFF for those at the top that would round past it."""
    m = np.asarray(multiplier, np.int64)
    return np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)


def requantize_s64(acc, multiplier, shift):
    """arm_nn_requantize_s64 on an int64 accumulator (call with x64 on): acc times the reduced
    multiplier, shifted right by 15 - shift with the half added -- CMSIS-NN's two steps (>> (14 -
    shift), then (r + 1) >> 1) round the same. multiplier/shift as in requantize(); shift <= 14."""
    s = np.asarray(shift, np.int64)
    if s.size and (s.min() < -31 or s.max() > 14):
        raise ValueError(f"requantize_s64: shift out of [-31, 14]: {shift}")
    total = 15 - s
    rounding = jnp.asarray(np.int64(1) << (total - 1), jnp.int64)
    return (acc * jnp.asarray(reduced_multiplier(multiplier), jnp.int64) + rounding) >> jnp.asarray(total, jnp.int64)


def mult_by_power_of_two(x, exp: int):
    """arm_nn_mult_by_power_of_two: x << exp, saturating to int32."""
    thresh = (1 << (31 - exp)) - 1
    result = jnp.where(x > thresh, jnp.int32(I32_MAX), x << exp)
    return jnp.where(x < -thresh, jnp.int32(I32_MIN), result)


_EXP_BARREL = (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)


def exp_on_negative_values(val):
    """arm_nn_exp_on_negative_values: exp(x) for x <= 0 in Q5.26 input, Q0.31 output."""
    val = jnp.asarray(val, jnp.int32)
    mod_minus_quarter = (val & ((1 << 24) - 1)) - (1 << 24)
    remainder = mod_minus_quarter - val
    x = (mod_minus_quarter << 5) + (1 << 28)
    x2 = doubling_high_mult(x, x)
    inner = divide_by_power_of_two(doubling_high_mult(x2, x2), 2) + doubling_high_mult(x2, x)
    poly = divide_by_power_of_two(doubling_high_mult(inner, 715827883) + x2, 1)
    result = 1895147668 + doubling_high_mult(jnp.int32(1895147668), x + poly)
    for i, c in enumerate(_EXP_BARREL):
        bit = (remainder & (1 << (24 + i))) != 0
        result = jnp.where(bit, doubling_high_mult(result, jnp.int32(c)), result)
    return jnp.where(val == 0, jnp.int32(I32_MAX), result)


def one_over_one_plus_x_for_x_in_0_1(val):
    """arm_nn_one_over_one_plus_x_for_x_in_0_1 for val >= 0 (what softmax passes)."""
    # ((int64)val + INT32_MAX + 1) / 2 for val >= 0, without 64 bits
    half_denominator = (val >> 1) + (1 << 30)
    x = 1515870810 + doubling_high_mult(half_denominator, jnp.int32(-1010580540))
    for _ in range(3):
        step = doubling_high_mult(x, (1 << 29) - doubling_high_mult(half_denominator, x))
        x = x + mult_by_power_of_two(step, 2)
    return mult_by_power_of_two(x, 1)
