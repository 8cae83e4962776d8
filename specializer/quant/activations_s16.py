"""int16 LOGISTIC and TANH (TFLite's 16x8 scheme) as JAX blocks, bit-exact against TFLite Micro,
and the int16 sigmoid / tanh arithmetic the LSTM block shares.

TFLite's int16 Logistic and Tanh (reference_integer_ops/logistic.h, tanh.h) rescale the input to
units of 1/(3 * 4096) -- (x * input_multiplier + round) >> input_left_shift, so that +-2^17 is
+-10.7 -- then interpolate a 256-entry table of sigmoid(k / 24) in 0.16 fixed point over the
rescaled value's low 9 bits (sigmoid) or 8 bits (tanh, as 2 sigmoid(2x) - 1); the output is Q0.15
(scale 2^-15, zero point 0). TFLite Micro's Prepare (logistic_common.cc, tanh.cc) takes the input
scale as a power of two when CheckedLog2 says so and the shift that makes is 0 (tanh: 0 or 1): the
multiplier is then 3 << shift; otherwise it doubles scale * 4096 * 3 (double) until it passes
32767 / 2 and truncates it.

CMSIS-NN's arm_nn_activation_s16 computes the same with a multiplier of 3 and a left shift (or a
rounding right shift): a block whose multiplier is 3 times a power of two is lowered onto it
(capture); any other stays XLA's code. Reference (read, not copied): TFLite Micro's kernels above,
CMSIS-NN v7.0.0's arm_nn_activation_s16.c.
"""

from __future__ import annotations

import math
import jax
import jax.numpy as jnp
import numpy as np

from specializer.quant import calls
from specializer.quant.fixedpoint import tflite_round
from specializer.quant.params import LogisticS16Params, SigmoidLikeS16Params, TanhS16Params

Shape = tuple[int, ...]
OUT_SCALE = 2.0 ** -15  # Q0.15, what TFLite Micro requires of both ops' int16 output
INPUT_INTEGER_BITS = 3

# TFLite's sigmoid_table_uint16: sigmoid(k / 24) in 0.16 fixed point as TFLite tabulates it. The
# entries are not a rounding of the function (they differ from round(65536 * sigmoid(k / 24)) by
# -0.5 to +1.1 in 44 places), so no formula reproduces them: they are TFLite's definition of its
# int16 sigmoid and tanh, which bit-exactness needs (tests/test_lstm_s8.py, tests/test_activations_s16.py)
SIGMOID_TABLE = np.array((
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794,
    41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443,
    48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374,
    54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544,
    58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279,
    61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990,
    63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030,
    64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652,
    64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019,
    65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234,
    65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476,
    65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529,
    65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532,
    65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534,
    65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535), np.int32)


# ---------------------------------------------------------------- the arithmetic


def _rescaled(x, mult: int, shift: int):
    rnd = (1 << (shift - 1)) if shift > 0 else 0
    return (x.astype(jnp.int32) * mult + rnd) >> shift


def _interpolated(v, bits: int, saturated: int):
    """The table at |v| >> bits, interpolated over |v|'s low bits; `saturated` from index 255 on."""
    a = jnp.abs(v)
    uh = a >> bits
    k = jnp.minimum(uh, 254)
    table = jnp.asarray(SIGMOID_TABLE)
    ua, ub = table[k], table[k + 1]
    return jnp.where(uh >= 255, jnp.int32(saturated), (ua << bits) + (a & ((1 << bits) - 1)) * (ub - ua))


def sigmoid16(x, mult: int = 3, shift: int = 0):
    """TFLite's int16 Logistic of int16 x with its input multiplier and left shift: Q0.15 out."""
    v = _rescaled(x, mult, shift)
    r = _interpolated(v, 9, 0x7FFF << 10)
    r = jnp.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return (r >> 10).astype(jnp.int16)


def tanh16(x, mult: int = 3, shift: int = 0):
    """TFLite's int16 Tanh of int16 x with its input multiplier and left shift: Q0.15 out."""
    v = _rescaled(x, mult, shift)
    r = _interpolated(v, 8, 0xFFFF << 8)
    r = jnp.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return (r >> 8).astype(jnp.int16)


# ---------------------------------------------------------------- blocks (parameters: params.LogisticS16Params,
# params.TanhS16Params)


def _checked_log2(x: float) -> tuple[bool, int]:
    """TFLite's CheckedLog2 in float32: (within 1e-3 of a power of two, the rounded log2)."""
    f = np.float32
    x_log2 = f(f(np.log(f(x))) * f(f(1.0) / f(np.log(f(2.0)))))
    rounded = f(tflite_round(float(x_log2)))
    return bool(abs(f(x_log2 - rounded)) < f(1e-3)), int(rounded)


def _input_rescale(op: str, in_scale: float, pot_shifts: tuple[int, ...]) -> tuple[int, int]:
    """(multiplier, left shift) as TFLite Micro's Prepare derives them for int16 input."""
    if not (math.isfinite(in_scale) and in_scale > 0):
        raise ValueError(f"int16 {op}: input scale {in_scale} is not a positive number")
    pot, log2 = _checked_log2(in_scale)
    shift = (15 - INPUT_INTEGER_BITS) + log2
    if pot and shift in pot_shifts:
        return 3 << shift, 0
    multiplier, shift = float(np.float32(in_scale)) * 4096.0 * 3.0, 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    if multiplier >= 32768:
        raise ValueError(f"int16 {op}: input scale {in_scale} is above what TFLite Micro's kernel takes "
                         "(its multiplier passes 32767)")
    return int(multiplier), shift


def _require_q15(op: str, out_scale: float, out_zp: int) -> None:
    pot, log2 = _checked_log2(out_scale)
    if not pot or log2 != -15 or out_zp != 0:
        raise ValueError(f"int16 output scale {out_scale} / zero point {out_zp}; {op} needs scale 2^-15, "
                         "zero point 0 (TFLite Micro's check)")


def logistic_params(shape: Shape, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> LogisticS16Params:
    _require_q15("LOGISTIC", out_scale, out_zp)
    return LogisticS16Params(tuple(shape), *_input_rescale("LOGISTIC", in_scale, (0,)))


def tanh_params(shape: Shape, in_scale: float, in_zp: int, out_scale: float, out_zp: int) -> TanhS16Params:
    _require_q15("TANH", out_scale, out_zp)
    return TanhS16Params(tuple(shape), *_input_rescale("TANH", in_scale, (0, 1)))


def _block(x, p: SigmoidLikeS16Params, fn):
    if tuple(x.shape) != tuple(p.shape) or x.dtype != jnp.int16:
        raise ValueError(f"{p.op}: input must be int16{list(p.shape)}, got {x.dtype}{list(x.shape)}")
    lowered = calls.call(p, p.shape, x)  # None: no arm_nn_activation_s16 for it; capture records why
    if lowered is not None:
        return lowered
    with jax.named_scope(p.scope):
        return fn(x, p.input_multiplier, p.input_left_shift)


def logistic(x, p: LogisticS16Params):
    """int16 sigmoid, Q0.15 out."""
    return _block(x, p, sigmoid16)


def tanh(x, p: TanhS16Params):
    """int16 tanh, Q0.15 out."""
    return _block(x, p, tanh16)
