"""int8 LOGISTIC, TANH, HARD_SWISH and LEAKY_RELU as JAX blocks, bit-exact against TFLite Micro.

Each op has a frozen parameter dataclass (the integers TFLite Micro's Prepare derives), a
function deriving it from the tensors' scales and zero points as that Prepare does (frexp, std::round
and the double arithmetic of the TFLite Micro build it is checked against; ValueError, one line, for
what TFLite Micro refuses or leaves undefined), and a JAX function on the int8 input. The output
is a function of the int8 input alone, so the block is a lookup in a 256-entry table: TFLite
Micro's arithmetic (vectorized int32 JAX below) run once over every int8 value at trace time.
Bit-exact by construction; one byte load an element on the device instead of the fixed-point
steps, and one small constant instead of their HLO in every model (a GRU's nine gates took XLA
28 s to compile as arithmetic).

Reference (read, not copied): TFLite Micro's kernels (tensorflow/lite/micro/kernels/
logistic_common.cc, tanh.cc, hard_swish_common.cc, leaky_relu_common.cc) and the reference ops
they call (tensorflow/lite/kernels/internal/reference/integer_ops/logistic.h, integer_ops/tanh.h,
hard_swish.h, leaky_relu.h), with gemmlowp's fixedpoint.h (logistic, tanh, exp_on_negative_values)
and TFLite's default double-rounding MultiplyByQuantizedMultiplier (= fixedpoint.requantize).
int8 LOGISTIC and TANH are TFLite Micro's fixed point (gemmlowp's, not LiteRT's own int8 tables);
HARD_SWISH its 16-bit fixed point, emulated here with its int16 wrap and saturation.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.quant import calls, int_eval
from specializer.quant.fixedpoint import (I32_MAX, divide_by_power_of_two, doubling_high_mult, mult_by_power_of_two,
                                          quantize_multiplier, requantize)
from specializer.quant.params import _activation_bits, _Block

Shape = tuple[int, ...]

# the fixed output quantization TFLite's int8 kernels write (and its converter gives these ops)
LOGISTIC_OUT = (1 / 256, -128)
TANH_OUT = (1 / 128, 0)
SIGMOID_INPUT_INTEGER_BITS = 4  # logistic and tanh take their input in Q4.27


# ---------------------------------------------------------------- parameters


def _check_zero_points(op: str, *zps: int) -> None:
    if any(not -128 <= z <= 127 for z in zps):
        raise ValueError(f"{op}: zero points {zps} must be int8")


@dataclass(frozen=True)
class _SigmoidLike(_Block):
    """int8 LOGISTIC / TANH (TFLite Micro's reference_integer_ops::Logistic / Tanh): input - zero
    point beyond +-input_range_radius saturates; inside it is rescaled to Q4.27 by input_multiplier
    * 2**(input_left_shift - 31)."""
    shape: Shape
    input_zero_point: int
    input_range_radius: int
    input_multiplier: int
    input_left_shift: int

    def __post_init__(self):
        _check_sigmoid_like(self)


@dataclass(frozen=True)
class LogisticParams(_SigmoidLike):
    """Output scale 1/256, zero point -128."""
    op: ClassVar[str] = "logistic_s8"


@dataclass(frozen=True)
class TanhParams(_SigmoidLike):
    """Output scale 1/128, zero point 0."""
    op: ClassVar[str] = "tanh_s8"


def _check_sigmoid_like(p) -> None:
    _check_zero_points(p.op, p.input_zero_point)
    if not (1 << 30 <= p.input_multiplier < 1 << 31 and 0 <= p.input_left_shift <= 62 and p.input_range_radius >= 0):
        raise ValueError(f"{p.op}: multiplier {p.input_multiplier} / left shift {p.input_left_shift} / radius "
                         f"{p.input_range_radius} out of range")


@dataclass(frozen=True)
class HardSwishParams(_Block):
    """int8 HARD_SWISH (reference_ops::HardSwish<int8_t>): 16-bit multipliers (Q0.15) and
    exponents for the output (input scale / 128 -> output scale, exponent <= 0) and for the
    "reluish" factor (input scale / 128 -> 3 / 32768)."""
    op: ClassVar[str] = "hard_swish_s8"
    shape: Shape
    input_zero_point: int
    output_zero_point: int
    output_multiplier: int
    output_exponent: int
    reluish_multiplier: int
    reluish_exponent: int

    def __post_init__(self):
        _check_zero_points(self.op, self.input_zero_point, self.output_zero_point)
        if not (0 <= self.output_multiplier < 1 << 15 and 0 <= self.reluish_multiplier < 1 << 15
                and -31 <= self.output_exponent <= 0 and -31 <= self.reluish_exponent <= 30):
            raise ValueError(f"{self.op}: multipliers ({self.output_multiplier}, {self.reluish_multiplier}) / "
                             f"exponents ({self.output_exponent}, {self.reluish_exponent}) out of range")


@dataclass(frozen=True)
class LeakyReluParams(_Block):
    """int8 LEAKY_RELU (reference_ops::QuantizeLeakyRelu): input - zero point >= 0 requantized by
    the identity multiplier, below 0 by alpha's (negative for a negative alpha: TFLite Micro
    scales by its magnitude and negates the result). activation_bits 16: TFLite's int16 one, zero
    points 0 (the 16x8 scheme), computed as it is (no table), XLA's code (CMSIS-NN has none)."""
    shape: Shape
    input_zero_point: int
    output_zero_point: int
    identity_multiplier: int
    identity_shift: int
    alpha_multiplier: int
    alpha_shift: int
    activation_bits: int = _activation_bits()  # 16: int16 in and out

    @property
    def op(self) -> str:
        return f"leaky_relu_s{self.activation_bits}"

    def __post_init__(self):
        if self.activation_bits not in (8, 16):
            raise ValueError(f"{self.op}: activation_bits must be 8 or 16, got {self.activation_bits}")
        if self.activation_bits == 16 and (self.input_zero_point, self.output_zero_point) != (0, 0):
            raise ValueError(f"{self.op}: int16 activations are symmetric: zero points must be 0, got "
                             f"{(self.input_zero_point, self.output_zero_point)}")
        _check_zero_points(self.op, self.input_zero_point, self.output_zero_point)
        for m, s in ((self.identity_multiplier, self.identity_shift), (abs(self.alpha_multiplier), self.alpha_shift)):
            if not (0 <= m < 1 << 31 and -31 <= s <= 30):
                raise ValueError(f"{self.op}: multiplier {m} / shift {s} out of range ([0, 2**31) and [-31, 30])")


def _tflm_multiplier(real: float, what: str) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier in its default (double-rounding) build: frexp and std::round,
    sign-symmetric, a shift below -31 flushed to (0, 0); a shift above 30 (which that build keeps,
    to shift an int32 by 31 or more) refused."""
    if not math.isfinite(real):
        raise ValueError(f"{what} multiplier {real} is not finite")
    try:
        m, s = quantize_multiplier(abs(real))
    except ValueError:
        raise ValueError(f"{what} multiplier {real} is too large (its shift is above 30)") from None
    return (-m if real < 0 else m), s


def _sigmoid_like_input(op: str, in_scale: float) -> tuple[int, int, int]:
    """(multiplier, left shift, radius) as CalculateArithmeticOpData derives them: frexp of the
    double scale * 2**27; the radius floor(15 * 2**27 / 2**shift), in double (CalculateInputRadius)."""
    real = float(np.float32(in_scale)) * float(1 << (31 - SIGMOID_INPUT_INTEGER_BITS))
    q, shift = math.frexp(real)
    if not 0 <= shift <= 62:  # TFLite Micro shifts 1LL by it: undefined outside [0, 62]
        raise ValueError(f"input scale {in_scale} is outside what TFLite Micro's int8 {op} computes "
                         "(2**-28 to 2**35)")
    # TfLiteRound (half away from zero); q * 2**31 is an integer for a float32 scale
    multiplier = int(math.floor(q * (1 << 31) + 0.5))
    radius = math.floor(1.0 * ((1 << SIGMOID_INPUT_INTEGER_BITS) - 1) * (1 << (31 - SIGMOID_INPUT_INTEGER_BITS))
                        / (1 << shift))
    return multiplier, shift, radius


def _require_output(op: str, out_scale: float, out_zp: int, want: tuple[float, int], why: str) -> None:
    if (float(np.float32(out_scale)), out_zp) != want:
        raise ValueError(f"int8 output scale {out_scale} / zero point {out_zp}; {op} needs scale "
                         f"1/{round(1 / want[0])}, zero point {want[1]} ({why})")


def logistic_params(shape: Shape, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> LogisticParams:
    # TFLite Micro refuses another zero point; it does not read the output scale but writes 1/256
    # steps (LiteRT requires exactly 1/256), so another scale would be a different function
    _require_output("LOGISTIC", out_scale, out_zp, LOGISTIC_OUT, "TFLite Micro's kernel writes 1/256 steps "
                    "from -128; it refuses another zero point")
    m, s, r = _sigmoid_like_input("LOGISTIC", in_scale)
    return LogisticParams(tuple(shape), in_zp, r, m, s)


def tanh_params(shape: Shape, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> TanhParams:
    # TFLite Micro checks neither; its kernel writes 1/128 steps around 0 whatever the file says
    _require_output("TANH", out_scale, out_zp, TANH_OUT, "TFLite Micro's kernel writes 1/128 steps around 0 "
                    "whatever the file says")
    m, s, r = _sigmoid_like_input("TANH", in_scale)
    return TanhParams(tuple(shape), in_zp, r, m, s)


def _double(v: float) -> float:
    """A float32 value of the file (a scale, alpha) widened to double before any arithmetic.
    HARD_SWISH's and LEAKY_RELU's Prepare in TFLite Micro's source as of 2026-08 divide and
    multiply in float32 and widen the result; the tflite-micro wheel these blocks are checked
    against (0.dev20261023) computes in double: the float32 recipe differs from it where a
    multiplier sits on a rounding tie (e.g. LEAKY_RELU 0.05 -> 0.04 with alpha 0.25, an exact
    5/16 in float32), the double one matches it everywhere tested."""
    return float(np.float32(v))


def _downscale_to_int16(m: int) -> int:
    """DownScaleInt32ToInt16Multiplier: round a Q0.31 multiplier to Q0.15, saturating near 1."""
    return (1 << 15) - 1 if m >= I32_MAX - (1 << 15) else (m + (1 << 15)) >> 16


def hard_swish_params(shape: Shape, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> HardSwishParams:
    # the quotients in double of the float32 scales: what the TFLite Micro build these blocks are
    # checked against computes (see _double)
    hires = _double(in_scale) / 128.0
    om, oe = _tflm_multiplier(hires / _double(out_scale), "HARD_SWISH output")
    if oe > 0:  # TFLite Micro's TF_LITE_ENSURE(output_multiplier_exponent <= 0)
        raise ValueError(f"output scale {out_scale} is too small for input scale {in_scale}: TFLite Micro's "
                         "HARD_SWISH needs input scale / 128 / output scale below 1")
    rm, re = _tflm_multiplier(hires / (3.0 / 32768.0), "HARD_SWISH reluish")
    return HardSwishParams(tuple(shape), in_zp, out_zp, _downscale_to_int16(om), oe, _downscale_to_int16(rm), re)


def leaky_relu_params(shape: Shape, in_scale: float, in_zp: int, out_scale: float, out_zp: int,
                      alpha: float, activation_bits: int = 8) -> LeakyReluParams:
    # input scale * alpha / output scale, left to right, in double (see _double)
    am, ash = _tflm_multiplier(_double(in_scale) * _double(alpha) / _double(out_scale), "LEAKY_RELU alpha")
    im, ish = _tflm_multiplier(_double(in_scale) / _double(out_scale), "LEAKY_RELU identity")
    return LeakyReluParams(tuple(shape), in_zp, out_zp, im, ish, am, ash, activation_bits)


# ---------------------------------------------------------------- gemmlowp's fixed point (int32)


def _exp_on_negative_values(a, integer_bits: int):
    """gemmlowp's exp_on_negative_values for Qm.(31-m) input a <= 0 (m = integer_bits <= 5), Q0.31
    output. fixedpoint.exp_on_negative_values is its m = 5 case (CMSIS-NN's); logistic needs m = 4."""
    frac = 31 - integer_bits
    quarter = 1 << (frac - 2)
    mod_minus_quarter = (a & (quarter - 1)) - quarter  # in [-1/4, 0)
    # Rescale<0>: to Q0.31, a saturating multiply by 2**m (no saturation on [-1/4, 0))
    x = mult_by_power_of_two(mod_minus_quarter, integer_bits) + (1 << 28)  # + 1/8: Taylor around -1/8
    x2 = doubling_high_mult(x, x)
    x3 = doubling_high_mult(x2, x)
    x4 = doubling_high_mult(x2, x2)
    inner = doubling_high_mult(divide_by_power_of_two(x4, 2) + x3, jnp.int32(715827883)) + x2  # 1/3
    poly = divide_by_power_of_two(inner, 1)
    result = 1895147668 + doubling_high_mult(jnp.int32(1895147668), x + poly)  # exp(-1/8)
    remainder = mod_minus_quarter - a
    # exp(-2**k) for k = -2 .. 4, applied for each set bit of the whole quarters
    for k, c in zip(range(-2, 5), (1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        if integer_bits > k:
            bit = (remainder & (1 << (frac + k))) != 0
            result = jnp.where(bit, doubling_high_mult(result, jnp.int32(c)), result)
    return jnp.where(a == 0, jnp.int32(I32_MAX), result)


def _newton_reciprocal(a):
    """gemmlowp's Newton-Raphson for 1 / (1 + a), a in [0, 1] Q0.31: half the denominator
    (RoundingHalfSum(a, 1)) and its reciprocal estimate in Q2.29."""
    half_denominator = (a >> 1) + (1 << 30)  # (a + INT32_MAX + 1) / 2 for a >= 0
    x = 1515870810 + doubling_high_mult(half_denominator, jnp.int32(-1010580540))  # 48/17 - 32/17 d
    for _ in range(3):
        step = doubling_high_mult(x, (1 << 29) - doubling_high_mult(half_denominator, x))
        x = x + mult_by_power_of_two(step, 2)  # Rescale<2> of a Q4 product
    return x


def _rescaled_input(d, p):
    """MultiplyByQuantizedMultiplier(input - zero point): the input in Q4.27. A left shift above 30
    leaves a radius of 0, where this value is never used; capping it keeps the shift defined."""
    return requantize(d, p.input_multiplier, min(p.input_left_shift, 30))


def _saturate_outside_radius(d, radius: int, y):
    # TFLite Micro tests the low bound first: with a radius of 0, an input at the zero point is -128
    return jnp.where(d <= -radius, -128, jnp.where(d >= radius, 127, y))


def _check(x, shape: Shape, p) -> None:
    if tuple(x.shape) != tuple(shape) or x.dtype != jnp.int8:
        raise ValueError(f"{p.op}: input must be int8{list(shape)}, got {x.dtype}{list(x.shape)}")


def _lookup(x, p, values):
    """The block as a table lookup: values(x, p) at every int8 input, computed once per
    parameters (the shape aside) at trace time, indexed by x + 128."""
    _check(x, p.shape, p)
    lowered = calls.call(p, p.shape, x)  # None: no CMSIS-NN function; capture records why
    if lowered is not None:
        return lowered
    table = _table(values, dataclasses.replace(p, shape=(256,)))
    with jax.named_scope(p.scope):
        return jnp.asarray(table)[x.astype(jnp.int32) + 128]


@functools.lru_cache(maxsize=None)
def _table(values, p) -> np.ndarray:
    x = np.arange(-128, 128, dtype=np.int32).astype(np.int8)
    try:  # traced once, run by NumPy (int_eval: JAX compiled each operation on its own)
        (table,) = int_eval.run(jax.make_jaxpr(lambda v: values(v, p))(x), x)
    except (int_eval.Unsupported, jax.errors.JAXTypeError):  # or not traceable: Python control flow on x
        with jax.ensure_compile_time_eval():
            table = values(jnp.asarray(x), p)
    return np.asarray(table, np.int8)


def logistic(x, p: LogisticParams):
    """int8 sigmoid, output scale 1/256 from -128."""
    return _lookup(x, p, _logistic_values)


def tanh(x, p: TanhParams):
    """int8 tanh, output scale 1/128 around 0."""
    return _lookup(x, p, _tanh_values)


def hard_swish(x, p: HardSwishParams):
    """int8 x * relu6(x + 3) / 6 in TFLite's 16-bit fixed point."""
    return _lookup(x, p, _hard_swish_values)


def leaky_relu(x, p: LeakyReluParams):
    """int8 (int16) x >= 0 ? x : alpha * x, each side requantized to the output."""
    if p.activation_bits == 8:
        return _lookup(x, p, _leaky_relu_values)
    if tuple(x.shape) != tuple(p.shape) or x.dtype != jnp.int16:
        raise ValueError(f"{p.op}: input must be int16{list(p.shape)}, got {x.dtype}{list(x.shape)}")
    calls.call(p, p.shape, x)  # no CMSIS-NN function: capture records why
    with jax.named_scope(p.scope):
        return _leaky_relu_values(x, p)


def _logistic_values(x, p: LogisticParams):
    d = x.astype(jnp.int32) - p.input_zero_point
    a = _rescaled_input(d, p)
    positive = a > 0
    magnitude = jnp.where(positive, a, -a)
    # 1 / (1 + exp(-|a|)), Rescale<0>(ExactMulByPot<-1>(x)): the Q2.29 estimate times 2 in Q0.31
    if_positive = mult_by_power_of_two(_newton_reciprocal(_exp_on_negative_values(-magnitude, 4)), 1)
    s = jnp.where(a == 0, jnp.int32(1 << 30), jnp.where(positive, if_positive, I32_MAX - if_positive))
    y = jnp.clip(divide_by_power_of_two(s, 23) - 128, -128, 127)
    return _saturate_outside_radius(d, p.input_range_radius, y).astype(jnp.int8)


def _tanh_values(x, p: TanhParams):
    d = x.astype(jnp.int32) - p.input_zero_point
    a = _rescaled_input(d, p)
    negative = a < 0
    # exp(-2|a|): -|a| read as Q5.26 (ExactMulByPot<1>), then (1 - e) / (1 + e) = 2 / (1 + e) - 1
    e = _exp_on_negative_values(jnp.where(negative, a, -a), 5)
    t = mult_by_power_of_two(_newton_reciprocal(e) - (1 << 29), 2)
    s = jnp.where(a == 0, 0, jnp.where(negative, -t, t))
    y = jnp.clip(divide_by_power_of_two(s, 24), -128, 127)
    return _saturate_outside_radius(d, p.input_range_radius, y).astype(jnp.int8)


# ---------------------------------------------------------------- int16 fixed point (hard swish)


def _wrap16(v):
    """A C store into int16_t: the low 16 bits, sign-extended."""
    return ((v + (1 << 15)) & 0xFFFF) - (1 << 15)


def _int16_constant(v: int) -> int:
    return ((v + (1 << 15)) & 0xFFFF) - (1 << 15)


def _rounding_doubling_high_mul16(a, b):
    """gemmlowp's SaturatingRoundingDoublingHighMul for int16: (a*b + nudge) / 2**15, truncated."""
    ab = a * b
    r = lax.div(ab + jnp.where(ab >= 0, 1 << 14, 1 - (1 << 14)), jnp.int32(1 << 15))
    return jnp.where((a == b) & (a == -(1 << 15)), (1 << 15) - 1, r)


def _doubling_high_mul16(a, b):
    """hard_swish.h's SaturatingDoublingHighMul: a*b / 2**15 truncated toward zero (no nudge)."""
    r = lax.div(a * b, jnp.int32(1 << 15))
    return jnp.where((a == b) & (a == -(1 << 15)), (1 << 15) - 1, r)


def _rounding_divide_by_pot16(x, exponent: int):
    """gemmlowp's RoundingDivideByPOT on int16_t, exponent in [0, 31]: its mask, threshold and sum
    are int16, so from exponent 16 on the mask is -1 (all ones), as C computes it."""
    mask = _int16_constant((1 << exponent) - 1)
    threshold = _wrap16((mask >> 1) + (x < 0).astype(jnp.int32))
    return _wrap16((x >> exponent) + ((x & mask) > threshold).astype(jnp.int32))


def _saturating_left_shift16(v, amount: int):
    """hard_swish.h's SaturatingLeftShift: v * 2**amount clamped to int16."""
    if amount >= 16:  # any nonzero value saturates
        return jnp.where(v > 0, (1 << 15) - 1, jnp.where(v < 0, -(1 << 15), 0))
    return jnp.clip(v << amount, -(1 << 15), (1 << 15) - 1)


def _hard_swish_values(x, p: HardSwishParams):
    hires = _wrap16(_wrap16(x.astype(jnp.int32) - p.input_zero_point) * (1 << 7))  # input scale / 128
    preshift_out = _rounding_doubling_high_mul16(hires, jnp.int32(p.output_multiplier))
    # the reluish factor: the input with 3.0 at 32768, saturating; a left shift is split around
    # the multiply so only its last bit can saturate the product
    r = hires
    if p.reluish_exponent > 0:
        r = _saturating_left_shift16(r, p.reluish_exponent - 1)
    r = _rounding_doubling_high_mul16(r, jnp.int32(p.reluish_multiplier))
    if p.reluish_exponent > 0:
        r = _saturating_left_shift16(r, 1)
    if p.reluish_exponent < 0:
        r = _rounding_divide_by_pot16(r, -p.reluish_exponent)
    r = _wrap16((r + (1 << 15)) >> 1)  # [-1, 1] -> [0, 1]
    y = _rounding_divide_by_pot16(_doubling_high_mul16(r, preshift_out), -p.output_exponent)
    y = _wrap16(y + p.output_zero_point)
    return jnp.clip(y, -128, 127).astype(jnp.int8)


def _leaky_relu_values(x, p: LeakyReluParams):
    d = x.astype(jnp.int32) - p.input_zero_point
    identity = requantize(d, p.identity_multiplier, p.identity_shift)
    scaled = requantize(d, abs(p.alpha_multiplier), p.alpha_shift)
    alpha = -scaled if p.alpha_multiplier < 0 else scaled
    y = p.output_zero_point + jnp.where(d >= 0, identity, alpha)
    lo, hi = -(1 << (p.activation_bits - 1)), (1 << (p.activation_bits - 1)) - 1
    return jnp.clip(y, lo, hi).astype(jnp.int16 if p.activation_bits == 16 else jnp.int8)
