"""The static parameters of each int8 block, as CMSIS-NN's s8 functions take them.

Every field is a plain Python int or tuple, so a later lowering can build CMSIS-NN's structs
(cmsis_nn_dims, cmsis_nn_conv_params, cmsis_nn_per_channel_quant_params, ...) from them. A block
runs inside `jax.named_scope(p.scope)`; the scope ("cmsis_nn.<op>.<digest>") appears in the
op_name metadata of every HLO instruction the block produces, and `lookup(scope)` gives back the
parameters (registered when the block is traced, in the same process). The digest is a hash of
the parameters: equal parameters, equal name, in every run.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import ClassVar

Pair = tuple[int, int]

_REGISTRY: dict[str, object] = {}


def lookup(scope: str):
    """The parameters of the block whose scope name is (or ends) `scope`."""
    key = scope.rsplit("/", 1)[-1]
    if key not in _REGISTRY:
        raise KeyError(f"no int8 block registered under '{key}'")
    return _REGISTRY[key]


def registered() -> dict[str, dict]:
    """Every block traced so far in this process: scope name -> its parameters (JSON-ready),
    for a capture that wants to write them next to the HLO."""
    return {k: v.to_dict() for k, v in sorted(_REGISTRY.items())}


class _Block:
    op: ClassVar[str]

    @property
    def scope(self) -> str:
        # bias_bits is out of repr (blocks named as before it) and of the op name (one CMSIS-NN
        # function either way): a 32-bit one's name says so here
        key = repr(self) + (" bias_bits=32" if getattr(self, "bias_bits", 64) == 32 else "")
        digest = hashlib.sha1(key.encode()).hexdigest()[:12]
        name = f"cmsis_nn.{self.op}.{digest}"
        _REGISTRY.setdefault(name, self)
        return name

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        if d.get("weight_bits") == 8:  # the default: an int8 block's dict as before int4 weights
            del d["weight_bits"]
        if d.get("state_bits") == 16:  # the default: an SVDF's dict as before int8 states
            del d["state_bits"]
        if d.get("activation_bits") == 8:  # the default: an int8 block's dict as before the 16x8 scheme
            del d["activation_bits"]
        if d.get("bias_bits") == 64:  # the default: a 16x8 block's dict as before int32 biases
            del d["bias_bits"]
        if d.get("output_bits") == 8:  # the default: an int8 softmax's dict as before int16 outputs
            del d["output_bits"]
        return {"op": self.op, **{k: _lists(v) for k, v in d.items()}}


# int4 weights (CMSIS-NN's s4 functions): the filter travels packed, two weights a byte in its
# row-major order, the first in the low nibble (CMSIS-NN's and TFLite's packing); quantize() makes
# them symmetric, [-7, 7]. The field is left out of repr (the scope's digest) so an int8 block is named as before;
# an int4 block's op, and so its scope and custom call, end in _s4 instead.
def _weight_bits() -> int:
    return dataclasses.field(default=8, repr=False)


def packed_size(n: int) -> int:
    """Bytes of n int4 weights, packed."""
    return (n + 1) // 2


def _check_bits(bits: int, where: str) -> None:
    if bits not in (4, 8):
        raise ValueError(f"{where}: weight_bits must be 8 or 4, got {bits}")


# TFLite's 16x8 scheme (CMSIS-NN's s16 functions): int16 activations, symmetric (zero points 0),
# int8 weights, int64 biases; the field stays out of repr (the scope's digest) and of the dict when
# 8, so an int8 block is named as before, and an int16 block's op ends in _s16.
def _activation_bits() -> int:
    return dataclasses.field(default=8, repr=False)


# 16x8 biases (conv and dense): int64, TFLite's default, or int32, its converter's option, with
# which TFLite Micro sums in int32 and requantizes as for int8 (arm_convolve_s16's is_int32_bias).
# 64 stays out of repr and of the dict, so a 16x8 block is named as before.
def _bias_bits() -> int:
    return dataclasses.field(default=64, repr=False)


def _check_s16(p, weight_bits: int = 8, shifts=(), offsets=()) -> None:
    """activation_bits 8 or 16; a 16-bit block has int8 weights, zero offsets and, with int64
    sums, shifts <= 14 (requantize_s64 shifts right by 15 - shift); bias_bits 64, or 32 at 16."""
    if p.activation_bits not in (8, 16):
        raise ValueError(f"{p.op}: activation_bits must be 8 or 16, got {p.activation_bits}")
    bias_bits = getattr(p, "bias_bits", 64)
    if bias_bits not in (32, 64) or (bias_bits == 32 and p.activation_bits != 16):
        raise ValueError(f"{p.op}: bias_bits {bias_bits}: 64, or 32 with int16 activations")
    if p.activation_bits == 8:
        return
    if weight_bits != 8:
        raise ValueError(f"{p.op}: int16 activations take int8 weights (CMSIS-NN has no s16 x s4 function)")
    if any(offsets):
        raise ValueError(f"{p.op}: int16 activations are symmetric: offsets must be 0, got {list(offsets)}")
    if bias_bits == 64 and any(s > 14 for s in shifts):
        raise ValueError(f"{p.op}: shift {max(shifts)} > 14 (int16 requantization shifts right by 15 - shift)")


def _lists(v):
    return [_lists(x) for x in v] if isinstance(v, tuple) else v


def int_range(bits: int) -> Pair:
    """The values of a signed integer of `bits` bits: int8's (-128, 127), int16's (-32768, 32767)."""
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _check_act(act: Pair, where: str, bits: int = 8) -> None:
    lo, hi = act
    bottom, top = int_range(bits)
    if not bottom <= lo <= hi <= top:
        raise ValueError(f"{where}: activation range {act} is not within [{bottom}, {top}]")


def _check_quant(multipliers, shifts, n: int, where: str) -> None:
    if len(multipliers) != len(shifts) or len(multipliers) not in (1, n):
        raise ValueError(f"{where}: need 1 or {n} multipliers and as many shifts, "
                         f"got {len(multipliers)} and {len(shifts)}")
    for m, s in zip(multipliers, shifts):
        if not 0 <= m < 1 << 31 or not -31 <= s <= 30:
            raise ValueError(f"{where}: multiplier {m} / shift {s} out of range "
                             "([0, 2**31) and [-31, 30])")


def _check_dilation(dilation: Pair, where: str) -> None:
    if len(dilation) != 2 or min(dilation) < 1:
        raise ValueError(f"{where}: dilation {dilation} must be two factors >= 1")


@dataclass(frozen=True)
class ConvParams(_Block):
    """arm_convolve_s8: NHWC input, OHWI filter [Cout, KH, KW, Cin], per-output-channel
    requantization. padding is ((top, bottom), (left, right)); CMSIS-NN's conv_params.padding
    is (top, left), the bottom/right padding follows from output_dims."""
    input_dims: tuple[int, int, int, int]
    filter_dims: tuple[int, int, int, int]
    output_dims: tuple[int, int, int, int]
    stride: Pair
    padding: tuple[Pair, Pair]
    input_offset: int
    output_offset: int
    activation: Pair
    multipliers: tuple[int, ...]
    shifts: tuple[int, ...]
    dilation: Pair = (1, 1)  # (h, w): tap (i, j) reads input pixel (y + i * dh, x + j * dw)
    weight_bits: int = _weight_bits()  # 4: arm_convolve_s4, the filter packed
    activation_bits: int = _activation_bits()  # 16: arm_convolve_s16, int16 in and out, int64 bias
    bias_bits: int = _bias_bits()  # 32 (16x8 only): an int32 bias and int32 sums

    @property
    def op(self) -> str:
        return "convolve_s16" if self.activation_bits == 16 else f"convolve_s{self.weight_bits}"

    def __post_init__(self):
        _check_bits(self.weight_bits, self.op)
        _check_s16(self, self.weight_bits, self.shifts, (self.input_offset, self.output_offset))
        _check_act(self.activation, self.op, self.activation_bits)
        _check_quant(self.multipliers, self.shifts, self.filter_dims[0], self.op)
        _check_dilation(self.dilation, self.op)


@dataclass(frozen=True)
class DepthwiseParams(_Block):
    """arm_depthwise_conv_s8: NHWC input, filter [1, KH, KW, Cin * ch_mult]; output channel
    c * ch_mult + m reads input channel c."""
    input_dims: tuple[int, int, int, int]
    filter_dims: tuple[int, int, int, int]
    output_dims: tuple[int, int, int, int]
    ch_mult: int
    stride: Pair
    padding: tuple[Pair, Pair]
    input_offset: int
    output_offset: int
    activation: Pair
    multipliers: tuple[int, ...]
    shifts: tuple[int, ...]
    dilation: Pair = (1, 1)
    weight_bits: int = _weight_bits()  # 4: arm_depthwise_conv_s4, the filter packed
    activation_bits: int = _activation_bits()  # 16: arm_depthwise_conv_s16

    @property
    def op(self) -> str:
        return "depthwise_conv_s16" if self.activation_bits == 16 else f"depthwise_conv_s{self.weight_bits}"

    def __post_init__(self):
        _check_bits(self.weight_bits, self.op)
        _check_s16(self, self.weight_bits, self.shifts, (self.input_offset, self.output_offset))
        _check_act(self.activation, self.op, self.activation_bits)
        _check_quant(self.multipliers, self.shifts, self.filter_dims[3], self.op)
        _check_dilation(self.dilation, self.op)


@dataclass(frozen=True)
class TransposeConvParams(_Block):
    """arm_transpose_conv_s8: NHWC input, filter [Cout, KH, KW, Cin] (TFLite's TRANSPOSE_CONV),
    per-output-channel requantization. Input pixel (iy, ix) through tap (ky, kx) reaches output
    (iy * stride_h - pad_h + ky, ix * stride_w - pad_w + kx); padding is (pad_h, pad_w), what
    CMSIS-NN's transpose_conv_params.padding holds."""
    op: ClassVar[str] = "transpose_conv_s8"
    input_dims: tuple[int, int, int, int]
    filter_dims: tuple[int, int, int, int]
    output_dims: tuple[int, int, int, int]
    stride: Pair
    padding: Pair
    input_offset: int
    output_offset: int
    activation: Pair
    multipliers: tuple[int, ...]
    shifts: tuple[int, ...]

    def __post_init__(self):
        _check_act(self.activation, self.op)
        _check_quant(self.multipliers, self.shifts, self.filter_dims[0], self.op)
        if min(self.stride) < 1 or min(self.padding) < 0:
            raise ValueError(f"{self.op}: stride {self.stride} must be >= 1 and padding {self.padding} >= 0")
        if self.filter_dims[3] != self.input_dims[3] or self.output_dims[3] != self.filter_dims[0]:
            raise ValueError(f"{self.op}: filter {self.filter_dims} does not take input {self.input_dims} "
                             f"to output {self.output_dims}")

    def macs(self) -> int:
        """The products TFLite's scatter computes: those landing inside the output."""
        def landing(size: int, k: int, s: int, pad: int, out: int) -> int:
            return sum(1 for i in range(size) for t in range(k) if 0 <= i * s - pad + t < out)
        n, ih, iw, cin = self.input_dims
        cout, kh, kw, _ = self.filter_dims
        _, oh, ow, _ = self.output_dims
        return (n * landing(ih, kh, self.stride[0], self.padding[0], oh)
                * landing(iw, kw, self.stride[1], self.padding[1], ow) * cin * cout)


@dataclass(frozen=True)
class FullyConnectedParams(_Block):
    """arm_fully_connected_s8: input [batch, in], filter [out, in] (TFLite's layout); one
    multiplier/shift (per tensor) or one per output."""
    batch: int
    in_features: int
    out_features: int
    input_offset: int
    output_offset: int
    activation: Pair
    multipliers: tuple[int, ...]
    shifts: tuple[int, ...]
    weight_bits: int = _weight_bits()  # 4: arm_fully_connected_s4, the filter packed
    activation_bits: int = _activation_bits()  # 16: arm_fully_connected_s16
    bias_bits: int = _bias_bits()  # 32 (16x8 only): an int32 bias and int32 sums (XLA's code)

    @property
    def op(self) -> str:
        return "fully_connected_s16" if self.activation_bits == 16 else f"fully_connected_s{self.weight_bits}"

    def __post_init__(self):
        _check_bits(self.weight_bits, self.op)
        _check_s16(self, self.weight_bits, self.shifts, (self.input_offset, self.output_offset))
        _check_act(self.activation, self.op, self.activation_bits)
        _check_quant(self.multipliers, self.shifts, self.out_features, self.op)


@dataclass(frozen=True)
class PoolParams(_Block):
    """arm_avgpool_s8 / arm_max_pool_s8 (kind "avg" / "max"): input and output share scale and
    zero point; padded positions are not counted."""
    kind: str
    input_dims: tuple[int, int, int, int]
    filter: Pair
    output_dims: tuple[int, int, int, int]
    stride: Pair
    padding: tuple[Pair, Pair]
    activation: Pair
    activation_bits: int = _activation_bits()  # 16: arm_avgpool_s16 / arm_max_pool_s16

    def __post_init__(self):
        if self.kind not in ("avg", "max"):
            raise ValueError(f"pool kind must be 'avg' or 'max', got {self.kind!r}")
        _check_s16(self)
        _check_act(self.activation, self.op, self.activation_bits)

    @property
    def op(self) -> str:  # type: ignore[override]
        return ("avgpool_s" if self.kind == "avg" else "max_pool_s") + str(self.activation_bits)


@dataclass(frozen=True)
class AddParams(_Block):
    """arm_elementwise_add_s8 on two tensors of one shape; activation_bits 16:
    arm_elementwise_add_s16 (TFLite's int16 ADD: offsets 0, left_shift 15)."""
    shape: tuple[int, ...]
    input_1_offset: int
    input_1_mult: int
    input_1_shift: int
    input_2_offset: int
    input_2_mult: int
    input_2_shift: int
    left_shift: int
    out_offset: int
    out_mult: int
    out_shift: int
    activation: Pair
    activation_bits: int = _activation_bits()

    @property
    def op(self) -> str:
        return f"elementwise_add_s{self.activation_bits}"

    def __post_init__(self):
        _check_s16(self, offsets=(self.input_1_offset, self.input_2_offset, self.out_offset))
        _check_act(self.activation, self.op, self.activation_bits)
        for m, s in ((self.input_1_mult, self.input_1_shift), (self.input_2_mult, self.input_2_shift),
                     (self.out_mult, self.out_shift)):
            _check_quant((m,), (s,), 1, self.op)
        # CMSIS-NN's DSP path widens (x + offset) as 16 bits and relies on the shift to push the
        # sign into place; from 16 on it equals the plain C path. int16: TFLite's 15, which
        # keeps x << left_shift inside int32.
        if self.activation_bits == 16 and self.left_shift != 15:
            raise ValueError(f"{self.op}: left_shift {self.left_shift}: int16 inputs take 15")
        if self.activation_bits == 8 and not 16 <= self.left_shift <= 23:
            raise ValueError(f"{self.op}: left_shift {self.left_shift} outside [16, 23]")


@dataclass(frozen=True)
class SubParams(AddParams):
    """TFLite's int8 SUB (SubElementwise): AddParams' arithmetic with the scaled second input
    subtracted from the first. CMSIS-NN v7.0.0 has no s8 subtract (and an add with the second
    multiplier negated rounds ties the other way), so the block stays XLA's code."""

    @property
    def op(self) -> str:
        return f"elementwise_sub_s{self.activation_bits}"


@dataclass(frozen=True)
class MulParams(_Block):
    """arm_elementwise_mul_s8 on two tensors of one shape (TFLite's int8 MUL, MulElementwise):
    out = clamp(requantize((x1 + input_1_offset) * (x2 + input_2_offset), out_mult, out_shift)
    + out_offset, activation); the offsets are the inputs' negated zero points, the multiplier
    the inputs' scales' product over the output's. `shape` is input 1's and the output's;
    `shape_2`, when given, input 2's, broadcast to `shape` as numpy (and TFLite's
    BroadcastMul) broadcast -- a squeeze-and-excite gate [1, 1, 1, C] over [1, H, W, C]: the same
    arithmetic, which CMSIS-NN's function (one shape) does not take. activation_bits 16:
    arm_elementwise_mul_s16 (TFLite's int16 MUL: offsets 0; the product of two int16 fits int32,
    requantized as the s8 form)."""
    shape: tuple[int, ...]
    input_1_offset: int
    input_2_offset: int
    out_offset: int
    out_mult: int
    out_shift: int
    activation: Pair
    shape_2: tuple[int, ...] | None = None
    activation_bits: int = _activation_bits()

    @property
    def op(self) -> str:
        return f"elementwise_mul_s{self.activation_bits}"

    def __post_init__(self):
        if self.shape_2 is not None and (len(self.shape_2) > len(self.shape) or any(
                d2 not in (1, d) for d, d2 in zip(self.shape[::-1], self.shape_2[::-1]))):
            raise ValueError(f"{self.op}: input 2 {list(self.shape_2)} does not broadcast to {list(self.shape)}")
        _check_s16(self, offsets=(self.input_1_offset, self.input_2_offset, self.out_offset))
        _check_act(self.activation, self.op, self.activation_bits)
        _check_quant((self.out_mult,), (self.out_shift,), 1, self.op)
        if self.activation_bits == 16:
            return
        for o in (self.input_1_offset, self.input_2_offset):
            if not -127 <= o <= 128:
                raise ValueError(f"{self.op}: input offset {o} outside [-127, 128] (a negated int8 zero point)")
        if not -128 <= self.out_offset <= 127:
            raise ValueError(f"{self.op}: output offset {self.out_offset} outside int8")


@dataclass(frozen=True)
class SoftmaxParams(_Block):
    """arm_softmax_s8 over the last axis: output scale 1/256, zero point -128 (TFLite's); with
    output_bits 16 arm_softmax_s8_s16, TFLite's int8 -> int16 softmax: scale 1/65536, zero point
    -32768 (out of repr and the dict at 8: the op's name says it)."""
    num_rows: int
    row_size: int
    mult: int
    shift: int
    diff_min: int
    output_bits: int = dataclasses.field(default=8, repr=False)

    @property
    def op(self) -> str:
        return "softmax_s8_s16" if self.output_bits == 16 else "softmax_s8"

    def __post_init__(self):
        # the row's sum of exponentials (each <= 2**19) must stay below 2**28 (4 bits of
        # headroom), so the final rounding shift (35 - headroom) stays <= 31: rows of at most 511
        # values; with an int16 output the shift is 8 smaller and the sum only has to stay an int32
        if self.output_bits not in (8, 16):
            raise ValueError(f"{self.op}: output_bits must be 8 or 16, got {self.output_bits}")
        longest = 511 if self.output_bits == 8 else 4095
        if not 1 <= self.row_size <= longest:
            raise ValueError(f"{self.op}: row size {self.row_size} outside [1, {longest}]")
        _check_quant((self.mult,), (0,), 1, self.op)
        if not 0 <= self.shift <= 30 or self.diff_min > 0:
            raise ValueError(f"{self.op}: shift {self.shift} outside [0, 30] or diff_min {self.diff_min} > 0")


@dataclass(frozen=True)
class SoftmaxS16Params(_Block):
    """arm_softmax_s16 over the last axis (TFLite's int16 softmax): input and output zero points
    0, output scale 1/32768; mult/shift (arm_nn_requantize) take (x - row max) to the exp table's
    [-65535, 0] for [-10, 0] (quant/lut_s16.py holds the tables)."""
    op: ClassVar[str] = "softmax_s16"
    activation_bits: ClassVar[int] = 16
    num_rows: int
    row_size: int
    mult: int
    shift: int

    def __post_init__(self):
        # the row's sum of exponentials (each <= 32767) stays an int32
        if not 1 <= self.row_size <= 65536:
            raise ValueError(f"{self.op}: row size {self.row_size} outside [1, 65536]")
        _check_quant((self.mult,), (self.shift,), 1, self.op)
        if self.shift > 15:  # (x - max) * 2^shift, x - max >= -65535, must stay an int32
            raise ValueError(f"{self.op}: shift {self.shift} > 15 (the scaled difference would overflow int32)")


@dataclass(frozen=True)
class SigmoidLikeS16Params(_Block):
    """int16 LOGISTIC / TANH (quant/activations_s16.py): int16 in, Q0.15 out; the input rescaled
    by (x * input_multiplier + round) >> input_left_shift (the power-of-two case already as
    multiplier 3 << shift, shift 0)."""
    activation_bits: ClassVar[int] = 16
    shape: tuple[int, ...]
    input_multiplier: int
    input_left_shift: int

    def __post_init__(self):
        # x * multiplier + round stays an int32 for every int16 x (TFLite Micro's are <= 32767)
        if not (0 < self.input_multiplier < 1 << 15 and 0 <= self.input_left_shift <= 31):
            raise ValueError(f"{self.op}: input multiplier {self.input_multiplier} / left shift "
                             f"{self.input_left_shift} out of range ((0, 32768) and [0, 31])")

    @property
    def cmsis_left_shift(self) -> int | None:
        return cmsis_left_shift(self.input_multiplier, self.input_left_shift)


def cmsis_left_shift(multiplier: int, shift: int) -> int | None:
    """arm_nn_activation_s16's left_shift for a block's (multiplier, left shift), or None: the
    multiplier is not 3 * 2^k. It computes x * (3 << left_shift), or (x * 3 + round) >> -left_shift:
    for multiplier 3 * 2^k that is (x * multiplier + round) >> shift with left_shift = k - shift
    (the low bits the shift drops are the rounding term's alone)."""
    if multiplier % 3 or (multiplier // 3) & (multiplier // 3 - 1):
        return None
    return (multiplier // 3).bit_length() - 1 - shift


@dataclass(frozen=True)
class LogisticS16Params(SigmoidLikeS16Params):
    op: ClassVar[str] = "logistic_s16"


@dataclass(frozen=True)
class TanhS16Params(SigmoidLikeS16Params):
    op: ClassVar[str] = "tanh_s16"


@dataclass(frozen=True)
class MeanParams(_Block):
    """TFLite's int8 MEAN (reference QuantizedMeanOrSum; CMSIS-NN has no kernel): the int32 sum over
    `axes`, less input_zero_point per summed element, requantized by multiplier/shift (1/count
    folded in, as TFLite folds it), plus the output zero point, clamped to int8. activation_bits
    16: TFLite's int16 MEAN, the same steps on int16 values (zero points 0), clamped to int16."""
    input_dims: tuple[int, ...]
    axes: tuple[int, ...]  # distinct, ascending, each in [0, rank)
    keep_dims: bool
    input_zero_point: int
    multiplier: int
    shift: int
    output_zero_point: int
    activation_bits: int = _activation_bits()

    @property
    def op(self) -> str:
        return f"mean_s{self.activation_bits}"

    def __post_init__(self):
        _check_s16(self, offsets=(self.input_zero_point, self.output_zero_point))
        if self.activation_bits == 16 and self.count >= 1 << 16:  # the int32 sum of int16 values
            raise ValueError(f"{self.op}: {self.count} values a mean (an int32 sum of int16 holds 65,535)")

    @property
    def count(self) -> int:
        """Input elements summed into each output."""
        n = 1
        for a in self.axes:
            n *= self.input_dims[a]
        return n

    @property
    def output_dims(self) -> tuple[int, ...]:
        return tuple(1 if d in self.axes else s for d, s in enumerate(self.input_dims)
                     if self.keep_dims or d not in self.axes)

    @staticmethod
    def of(input_dims, axes, keep_dims: bool, input_zero_point: int, multiplier: int, shift: int,
           output_zero_point: int, activation_bits: int = 8) -> "MeanParams":
        """With TFLite's 1/count folding of the input-to-output multiplier (multiplier, shift:
        QuantizeMultiplier(input scale / output scale)): multiplier << k // count, shift - k,
        k = floor(log2 count) kept within 32 and 31 + shift."""
        rank = len(input_dims)
        axes = tuple(sorted({a % rank for a in axes}))
        n = 1
        for a in axes:
            n *= input_dims[a]
        k = min(n.bit_length() - 1, 32, 31 + shift)
        return MeanParams(tuple(input_dims), axes, bool(keep_dims), input_zero_point, (multiplier << k) // n,
                          shift - k, output_zero_point, activation_bits)


@dataclass(frozen=True)
class SvdfParams(_Block):
    """arm_svdf_state_s16_s8 (TFLite's int8 SVDF with an int16 state and int16 time weights):
    input [batch, input_size] int8, feature weights [filters, input_size] int8, time weights
    [filters, memory] int16, bias [filters / rank] int32, state [batch, filters * memory] int16.
    One step: the state moves one place towards its start, each filter's feature product (input
    zero point subtracted) is requantized into the state's newest place, clamped to int16; the
    state dotted with the time weights, summed over each unit's `rank` filters, plus the bias,
    is requantized to int8. The zero points are the tensors' own (svdf_params takes them so, as
    TFLite Micro passes them); the state's is 0. TFLite's fused activation does not apply to the
    integer op (TFLite Micro clamps to int8 only).
    `state_bits` 8: arm_svdf_s8, the state and the time weights int8 (TFLite Micro's
    EvalInt8SvdfReference), the new values clamped to int8; the state's zero point still 0, as
    CMSIS-NN's function has no state offset."""
    batch: int
    input_size: int
    filters: int
    memory: int
    rank: int
    input_zero_point: int
    output_zero_point: int
    feature_multiplier: int
    feature_shift: int
    output_multiplier: int
    output_shift: int
    # out of repr (the scope's digest) and of the dict when 16, so an int16-state block is named as before
    state_bits: int = dataclasses.field(default=16, repr=False)

    @property
    def op(self) -> str:
        return "svdf_s8" if self.state_bits == 16 else "svdf_state8_s8"

    def __post_init__(self):
        if self.state_bits not in (8, 16):
            raise ValueError(f"svdf: state_bits must be 16 or 8, got {self.state_bits}")
        if min(self.batch, self.input_size, self.filters, self.memory, self.rank) < 1 or self.filters % self.rank:
            raise ValueError(f"{self.op}: {self.filters} filters of rank {self.rank}, input {self.input_size}, "
                             f"memory {self.memory}, batch {self.batch}: sizes must be >= 1 and the filters "
                             "a multiple of the rank")
        _check_quant((self.feature_multiplier,), (self.feature_shift,), 1, self.op)
        _check_quant((self.output_multiplier,), (self.output_shift,), 1, self.op)
        for z in (self.input_zero_point, self.output_zero_point):
            if not -128 <= z <= 127:
                raise ValueError(f"{self.op}: zero point {z} is outside int8")

    @property
    def units(self) -> int:
        return self.filters // self.rank

    @property
    def state_shape(self) -> tuple[int, int]:
        return (self.batch, self.filters * self.memory)

    @property
    def state_range(self) -> tuple[int, int]:
        """The clamp of the state's new values: its type's range."""
        return int_range(self.state_bits)

    def macs(self) -> int:
        """Each filter's feature product and its time dot, per batch (report/macs.py counts the
        lowered call the same)."""
        return self.batch * self.filters * (self.input_size + self.memory)


@dataclass(frozen=True)
class LstmParams(_Block):
    """TFLite's int8 UNIDIRECTIONAL_SEQUENCE_LSTM as TFLite Micro computes it (lstm_eval.h; the
    semantics of CMSIS-NN's arm_lstm_unidirectional_s8): int8 input and hidden state, int16 cell
    state of scale 2**cell_scale_power, int8 weights, int32 gate biases; no peephole, projection,
    layer norm or CIFG. Each gate is an input and a recurrent fully connected product into int16
    at scale 2**-12 (`gates`: (input multiplier, shift, recurrent multiplier, shift) for the
    forget, input, cell and output gates), the gates' sigmoid (the cell gate's tanh) int16 at 2**-15, the
    products forget * cell, input * cell gate and output * tanh(cell) requantized by the `*_mul`
    pairs. `cell_clip`: the quantized clip of the cell state (0: none)."""
    op: ClassVar[str] = "lstm_s8"
    batch: int
    time: int
    input_size: int
    cells: int
    time_major: bool
    input_zero_point: int
    hidden_zero_point: int
    gates: tuple[tuple[int, int, int, int], ...]
    forget_mul: Pair
    input_mul: Pair
    output_mul: Pair
    cell_scale_power: int
    cell_clip: int

    def __post_init__(self):
        if min(self.batch, self.time, self.input_size, self.cells) < 1:
            raise ValueError(f"{self.op}: sizes must be >= 1 (batch {self.batch}, time {self.time}, input "
                             f"{self.input_size}, cells {self.cells})")
        if len(self.gates) != 4:
            raise ValueError(f"{self.op}: 4 gates' multipliers, got {len(self.gates)}")
        for m1, s1, m2, s2 in self.gates:
            _check_quant((m1, m2), (s1, s2), 2, self.op)
        for m, s in (self.forget_mul, self.input_mul, self.output_mul):
            _check_quant((m,), (s,), 1, self.op)
        for z in (self.input_zero_point, self.hidden_zero_point):
            if not -128 <= z <= 127:
                raise ValueError(f"{self.op}: zero point {z} is outside int8")
        if not 0 <= self.cell_clip <= 32767:
            raise ValueError(f"{self.op}: cell clip {self.cell_clip} is not in [0, 32767]")
        if not -30 <= self.cell_scale_power <= 15:
            raise ValueError(f"{self.op}: cell scale 2**{self.cell_scale_power} is outside 2**-30..2**15")

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return (self.time, self.batch, self.input_size) if self.time_major else \
            (self.batch, self.time, self.input_size)

    @property
    def output_shape(self) -> tuple[int, int, int]:
        return self.input_shape[:2] + (self.cells,)

    def macs(self) -> int:
        """Four gates' input and recurrent products per step."""
        return self.batch * self.time * 4 * self.cells * (self.input_size + self.cells)
