"""int8 building blocks with TFLite's integer semantics, computed exactly as CMSIS-NN's s8
functions compute them (plain JAX on int8/int32 arrays; see params.py for each block's
static parameters and fixedpoint.py for the arithmetic).

TFLite's 16x8 scheme (a block's activation_bits 16, CMSIS-NN's s16 functions): int16 activations
with zero points 0, int8 weights, int64 biases, int64 sums requantized by requantize_s64. JAX
computes in 32 bits unless x64 is on, so such a block turns x64 on while it traces (its values
leave as int16) and takes its int64 bias as int32 [n, 2] words, low first (bias_words): the same
bytes the s16 function reads.

Conventions (TFLite's): activations are asymmetric int8 (CMSIS-NN's offsets: input_offset =
-input zero point, output_offset = output zero point), weights symmetric int8, biases int32 in
units of input scale x weight scale. Convolutions and dense layers are written as chains of
multiply-adds (patches x weights, or filter taps; no HLO convolution or dot), so XLA's CPU
backend runs them as plain integer code and capture takes XLA's IR for them as it is.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.quant import calls, lut_s16
from specializer.quant.fixedpoint import (divide_by_power_of_two, doubling_high_mult, exp_on_negative_values,
                                          one_over_one_plus_x_for_x_in_0_1, requantize, requantize_s64)
from specializer.quant.params import (AddParams, ConvParams, DepthwiseParams, FullyConnectedParams, MeanParams,
                                      MulParams, Pair, PoolParams, SoftmaxParams, SoftmaxS16Params, SubParams,
                                      TransposeConvParams, int_range, packed_size)



_one_dot = False  # inside values_only(): a block's matrix product is one int32 dot
_dot_used = False  # ... and some block was traced so


@contextmanager
def values_only():
    """For a run whose only product is values (the reference outputs, per-layer errors), never for
    a trace whose IR capture takes: each matrix product is one int32 dot. XLA compiles a chain of
    576 rank-1 updates (a 3x3x64 convolution) for seconds, a dot at once; integer arithmetic, so
    the values are the same. dot_used(): whether a block took that form since it began. The form
    is chosen when a block is traced: a function jitted inside keeps it (JAX's trace cache does not
    see this flag), so the trace capture takes IR from is always of a fresh callable."""
    global _one_dot, _dot_used
    outer = _one_dot
    _one_dot, _dot_used = True, _dot_used and outer
    try:
        yield
    finally:
        _one_dot = outer


def dot_used() -> bool:
    return _dot_used


def _matmul_nt(a, b, acc=jnp.int32):
    """int8 a[m, k] x int8 b[n, k]^T -> int32 [m, n] as a chain of k rank-1 multiply-adds, not an
    HLO dot: XLA fuses the int8 -> int32 widening into producers and capture has no kernel for
    the int32 dot that would leave; a multiply-reduce would be split by XLA into a materialized
    [m, n, k] product; the chain is one loop fusion with no temporary (values_only(): one dot).
    acc int64 (x64 on): an int16 block's sums."""
    global _dot_used
    a32, b32 = a.astype(acc), b.astype(acc)
    if _one_dot:
        _dot_used = True
        return lax.dot_general(a32, b32, (((1,), (1,)), ((), ())), preferred_element_type=acc)
    acc = a32[:, 0:1] * b32[:, 0][None, :]
    for k in range(1, a.shape[1]):
        acc = acc + a32[:, k:k + 1] * b32[:, k][None, :]
    return acc


def _operands(x, w, bias, n_out: int, p) -> tuple:
    """A lowered block's custom-call operands: input, filter and the bias if there is one."""
    if bias is None:
        return x, w
    _check_bias(bias, n_out, p)
    return x, w, bias


def _s16(p) -> bool:
    return getattr(p, "activation_bits", 8) == 16


def _act_type(p):
    return jnp.int16 if _s16(p) else jnp.int8


def _int64_sums(p) -> bool:
    """An int16 block with an int64 bias sums in int64; one with an int32 bias (bias_bits 32) and
    every int8 block in int32."""
    return _s16(p) and getattr(p, "bias_bits", 64) == 64


def _acc_type(p):
    return jnp.int64 if _int64_sums(p) else jnp.int32


def _wide(p):
    """x64 on while a block with int64 sums traces, nothing for the others."""
    return jax.enable_x64(True) if _int64_sums(p) else nullcontext()


def bias_words(b) -> np.ndarray:
    """int64 biases as an int16 block takes them: int32 [n, 2], each value's low word first (the
    int64 array's bytes on a little-endian core)."""
    return np.ascontiguousarray(np.asarray(b, np.int64)).view(np.int32).reshape(-1, 2)


def _check_bias(bias, n: int, p) -> None:
    if _int64_sums(p):
        _check(bias, (n, 2), jnp.int32, "bias (int64 as int32 words, bias_words)", p)
    else:
        _check(bias, (n,), jnp.int32, "bias", p)


def _bias(bias, p):
    """The bias as the block adds it: int32, or an int16 block's int64 (x64 on) from its words."""
    if not _int64_sums(p):
        return bias
    return (bias[:, 1].astype(jnp.int64) << 32) | bias[:, 0].astype(jnp.uint32).astype(jnp.int64)


def conv_output_size(size: int, k: int, stride: int, pad: Pair) -> int:
    return (size + pad[0] + pad[1] - k) // stride + 1


def same_padding(size: int, k: int, stride: int) -> Pair:
    """TensorFlow's SAME padding: output ceil(size / stride), the odd pixel at the end."""
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return total // 2, total - total // 2


def _check(x, shape, dtype, what: str, p) -> None:
    if tuple(x.shape) != tuple(shape) or x.dtype != dtype:
        raise ValueError(f"{p.op}: {what} must be {np.dtype(dtype).name}{list(shape)}, "
                         f"got {x.dtype}{list(x.shape)}")


def pack_int4(w) -> np.ndarray:
    """int4 weights (int8 values in [-8, 7]) packed as CMSIS-NN's s4 functions and TFLite read them:
    two a byte in row-major order, the first in the low nibble; an odd count's last high nibble 0."""
    v = np.asarray(w).reshape(-1)
    if v.size and (v.min() < -8 or v.max() > 7 or not np.array_equal(v, np.round(v))):
        raise ValueError(f"pack_int4: values in [{v.min()}, {v.max()}] are not int4 weights (integers in [-8, 7])")
    v = np.concatenate([v.astype(np.int8), np.zeros(v.size % 2, np.int8)]).astype(np.uint8) & 0xF
    return (v[0::2] | (v[1::2] << 4)).astype(np.uint8).view(np.int8)


def unpack_int4(packed, shape):
    """The int8 values of int4 weights packed by pack_int4, shaped `shape` (JAX: the reference
    computes from the same bytes the CMSIS-NN call reads)."""
    n = int(np.prod(shape))
    lo = jnp.right_shift(jnp.left_shift(packed, jnp.int8(4)), jnp.int8(4))  # sign-extend the low nibble
    hi = jnp.right_shift(packed, jnp.int8(4))
    return jnp.stack([lo, hi], axis=-1).reshape(-1)[:n].reshape(shape)


def _filter(w, dims, p):
    """Block p's filter as int8 values of shape `dims`; an int4 block's comes packed (1-D)."""
    if getattr(p, "weight_bits", 8) == 4:
        _check(w, (packed_size(int(np.prod(dims))),), jnp.int8, "packed int4 filter", p)
        return unpack_int4(w, dims)
    _check(w, dims, jnp.int8, "filter", p)
    return w


def _finish(acc, multipliers, shifts, output_offset: int, activation: Pair, s16: bool = False,
            int64_sums: bool | None = None):
    """Per-channel requantization, output offset, activation clamp, int8 (every s8 kernel's tail;
    s16: int16, and requantize_s64 of int64 sums unless int64_sums is False: an int32 bias's)."""
    m = multipliers[0] if len(multipliers) == 1 else np.asarray(multipliers, np.int64)
    s = shifts[0] if len(shifts) == 1 else np.asarray(shifts, np.int64)
    if s16 and int64_sums is not False:
        y = requantize_s64(acc, m, s) + output_offset
        return jnp.clip(y, activation[0], activation[1]).astype(jnp.int16)
    y = requantize(acc, m, s) + jnp.int32(output_offset)
    return jnp.clip(y, activation[0], activation[1]).astype(jnp.int16 if s16 else jnp.int8)


def _taps(xp, kh: int, kw: int, stride: Pair, out_hw: Pair, dilation: Pair = (1, 1)):
    """The strided window of padded input xp seen by filter tap (i, j), for every tap."""
    n, _, _, c = xp.shape
    oh, ow = out_hw
    for i in range(kh):
        for j in range(kw):
            y, x = i * dilation[0], j * dilation[1]
            yield i, j, lax.slice(xp, (0, y, x, 0),
                                  (n, y + (oh - 1) * stride[0] + 1, x + (ow - 1) * stride[1] + 1, c),
                                  (1, stride[0], stride[1], 1))


def _pad_with_zero_point(x, padding, input_offset: int):
    # padding holds the input zero point: it adds (zp + input_offset) * w = 0, as in CMSIS-NN
    (t, b), (l, r) = padding
    if not (t or b or l or r):
        return x
    return lax.pad(x, jnp.array(-input_offset, x.dtype), ((0, 0, 0), (t, b, 0), (l, r, 0), (0, 0, 0)))


def conv2d(x, w, bias, p: ConvParams):
    """arm_convolve_s8. x int8 NHWC, w int8 [Cout, KH, KW, Cin] (int4: packed), bias int32 [Cout] or None.
    activation_bits 16: arm_convolve_s16, x int16, bias int64 as bias_words (bias_bits 32: int32, int32 sums)."""
    _check(x, p.input_dims, _act_type(p), "input", p)
    packed, w = w, _filter(w, p.filter_dims, p)
    cout, kh, kw, cin = p.filter_dims
    n, oh, ow, _ = p.output_dims
    lowered = calls.call(p, p.output_dims, *_operands(x, packed, bias, cout, p))
    if lowered is not None:
        return lowered
    with jax.named_scope(p.scope), _wide(p):
        xp = _pad_with_zero_point(x, p.padding, p.input_offset)
        if (kh, kw, p.stride) == (1, 1, (1, 1)):
            patches = xp
        else:
            patches = jnp.concatenate([t for _, _, t in _taps(xp, kh, kw, p.stride, (oh, ow), p.dilation)],
                                      axis=-1)
        acc = _matmul_nt(patches.reshape(n * oh * ow, kh * kw * cin), w.reshape(cout, kh * kw * cin), _acc_type(p))
        acc = acc + jnp.int32(p.input_offset) * jnp.sum(w, axis=(1, 2, 3), dtype=jnp.int32)
        if bias is not None:
            _check_bias(bias, cout, p)
            acc = acc + _bias(bias, p)
        out = _finish(acc, p.multipliers, p.shifts, p.output_offset, p.activation, _s16(p), _int64_sums(p))
        return out.reshape(p.output_dims)


def depthwise_conv2d(x, w, bias, p: DepthwiseParams):
    """arm_depthwise_conv_s8. x int8 NHWC, w int8 [1, KH, KW, Cin * ch_mult] (int4: packed), bias int32.
    activation_bits 16: arm_depthwise_conv_s16, x int16, bias int64 as bias_words."""
    _check(x, p.input_dims, _act_type(p), "input", p)
    packed, w = w, _filter(w, p.filter_dims, p)
    _, kh, kw, cout = p.filter_dims
    _, oh, ow, _ = p.output_dims
    lowered = calls.call(p, p.output_dims, *_operands(x, packed, bias, cout, p))
    if lowered is not None:
        return lowered
    with jax.named_scope(p.scope), _wide(p):
        xp = _pad_with_zero_point(x, p.padding, p.input_offset)
        wide = jnp.int64 if _s16(p) else jnp.int32
        wi = w.astype(jnp.int32)
        acc = None
        for i, j, tap in _taps(xp, kh, kw, p.stride, (oh, ow), p.dilation):
            t = tap.astype(jnp.int32)
            if p.ch_mult > 1:
                t = jnp.repeat(t, p.ch_mult, axis=-1)
            term = (t * wi[0, i, j]).astype(wide)  # one product fits int32 (int16: 23 bits)
            acc = term if acc is None else acc + term
        acc = acc + jnp.int32(p.input_offset) * jnp.sum(wi, axis=(0, 1, 2))
        if bias is not None:
            _check_bias(bias, cout, p)
            acc = acc + _bias(bias, p)
        return _finish(acc, p.multipliers, p.shifts, p.output_offset, p.activation, _s16(p))


def stuffed_padding(size: int, out: int, k: int, stride: int, pad: int) -> Pair:
    """A transposed convolution (out = in * stride - pad + tap) as a stride-1 convolution of the
    input with stride - 1 pixels stuffed between neighbours and the filter reversed: the (low,
    high) padding of the stuffed input. Output y reads stuffed row y + t - (k - 1 - pad) through
    reversed tap t; the high side is whatever the output's size needs (negative: rows cropped)."""
    low = k - 1 - pad
    return low, out + k - 1 - ((size - 1) * stride + 1) - low


def transpose_conv2d(x, w, bias, p: TransposeConvParams):
    """arm_transpose_conv_s8 (TFLite's TRANSPOSE_CONV). x int8 NHWC, w int8 [Cout, KH, KW, Cin],
    bias int32 [Cout] or None. Computed as a stride-1 convolution of the input with stride - 1
    zero-point pixels between neighbours and the filter reversed: a stuffed or padded pixel holds
    the zero point, so it adds (zp + input_offset) * w = 0, and every real product is TFLite's."""
    _check(x, p.input_dims, jnp.int8, "input", p)
    _check(w, p.filter_dims, jnp.int8, "filter", p)
    cout, kh, kw, cin = p.filter_dims
    n, ih, iw, _ = p.input_dims
    _, oh, ow, _ = p.output_dims
    lowered = calls.call(p, p.output_dims, *_operands(x, w, bias, cout, p))
    if lowered is not None:
        return lowered
    with jax.named_scope(p.scope):
        pads = [(*stuffed_padding(size, out, k, s, pad), s - 1)
                for k, pad, s, size, out in zip((kh, kw), p.padding, p.stride, (ih, iw), (oh, ow))]
        xp = lax.pad(x, jnp.int8(-p.input_offset), ((0, 0, 0), *pads, (0, 0, 0)))
        wr = w[:, ::-1, ::-1, :]
        patches = jnp.concatenate([t for _, _, t in _taps(xp, kh, kw, (1, 1), (oh, ow))], axis=-1)
        acc = _matmul_nt(patches.reshape(n * oh * ow, kh * kw * cin), wr.reshape(cout, kh * kw * cin))
        acc = acc + jnp.int32(p.input_offset) * jnp.sum(w, axis=(1, 2, 3), dtype=jnp.int32)
        if bias is not None:
            _check(bias, (cout,), jnp.int32, "bias", p)
            acc = acc + bias
        return _finish(acc, p.multipliers, p.shifts, p.output_offset, p.activation).reshape(p.output_dims)


def fully_connected(x, w, bias, p: FullyConnectedParams):
    """arm_fully_connected_s8. x int8 [batch, in], w int8 [out, in] (int4: packed), bias int32 [out] or None.
    activation_bits 16: arm_fully_connected_s16, x int16, bias int64 as bias_words (bias_bits 32: int32
    [out], int32 sums)."""
    _check(x, (p.batch, p.in_features), _act_type(p), "input", p)
    packed, w = w, _filter(w, (p.out_features, p.in_features), p)
    lowered = calls.call(p, (p.batch, p.out_features), *_operands(x, packed, bias, p.out_features, p))
    if lowered is not None:
        return lowered
    with jax.named_scope(p.scope), _wide(p):
        acc = _matmul_nt(x, w, _acc_type(p))
        acc = acc + jnp.int32(p.input_offset) * jnp.sum(w, axis=1, dtype=jnp.int32)
        if bias is not None:
            _check_bias(bias, p.out_features, p)
            acc = acc + _bias(bias, p)
        return _finish(acc, p.multipliers, p.shifts, p.output_offset, p.activation, _s16(p), _int64_sums(p))


def _valid_counts(p: PoolParams) -> np.ndarray:
    """How many input pixels (padding excluded) each output pixel's window covers."""
    (t, _), (l, _) = p.padding
    _, h, w, _ = p.input_dims
    _, oh, ow, _ = p.output_dims
    ys = np.arange(oh) * p.stride[0] - t
    xs = np.arange(ow) * p.stride[1] - l
    cy = np.minimum(ys + p.filter[0], h) - np.maximum(ys, 0)
    cx = np.minimum(xs + p.filter[1], w) - np.maximum(xs, 0)
    counts = np.outer(cy, cx)
    if counts.min() <= 0:
        raise ValueError(f"{p.op}: a window covers no input pixel (padding too large)")
    return counts[None, :, :, None].astype(np.int32)


def _window(p: PoolParams):
    (t, b), (l, r) = p.padding
    return (1, p.filter[0], p.filter[1], 1), (1, p.stride[0], p.stride[1], 1), ((0, 0), (t, b), (l, r), (0, 0))


def _check_pool_output(p: PoolParams) -> None:
    """output_dims must be what the window gives: CMSIS-NN reads only top/left padding and
    takes the rest from output_dims, XLA's reduce_window from the padding."""
    (t, b), (l, r) = p.padding
    n, h, w, c = p.input_dims
    want = (n, conv_output_size(h, p.filter[0], p.stride[0], (t, b)),
            conv_output_size(w, p.filter[1], p.stride[1], (l, r)), c)
    if tuple(p.output_dims) != want:
        raise ValueError(f"{p.op}: output_dims {list(p.output_dims)} do not match the window "
                         f"(input {list(p.input_dims)}, filter {list(p.filter)}, stride {list(p.stride)}, "
                         f"padding {[list(q) for q in p.padding]} give {list(want)})")


def avg_pool(x, p: PoolParams):
    """arm_avgpool_s8: the sum over the window's valid pixels divided by their count, halves
    rounded away from zero (C division of sum +- count/2), then clamped (int16: arm_avgpool_s16)."""
    _check(x, p.input_dims, _act_type(p), "input", p)
    _check_pool_output(p)
    counts = _valid_counts(p)
    lowered = calls.call(p, p.output_dims, x)
    if lowered is not None:
        return lowered
    dims, strides, pads = _window(p)
    with jax.named_scope(p.scope):
        s = lax.reduce_window(x.astype(jnp.int32), jnp.int32(0), lax.add, dims, strides, pads)
        half = jnp.asarray(counts // 2)
        avg = lax.div(jnp.where(s > 0, s + half, s - half), jnp.asarray(counts))  # truncates, as C
        return jnp.clip(avg, p.activation[0], p.activation[1]).astype(_act_type(p))


def max_pool(x, p: PoolParams):
    """arm_max_pool_s8: the largest valid pixel of the window, then clamped (int16: arm_max_pool_s16)."""
    _check(x, p.input_dims, _act_type(p), "input", p)
    _check_pool_output(p)
    _valid_counts(p)
    lowered = calls.call(p, p.output_dims, x)
    if lowered is not None:
        return lowered
    dims, strides, pads = _window(p)
    with jax.named_scope(p.scope):
        # the type's least value as padding never wins over a valid pixel: padding is excluded
        low = jnp.array(jnp.iinfo(x.dtype).min, x.dtype)
        m = lax.reduce_window(x, low, lax.max, dims, strides, pads)
        return jnp.clip(m, p.activation[0], p.activation[1]).astype(x.dtype)


def add(x1, x2, p: AddParams):
    """arm_elementwise_add_s8: both inputs offset, shifted left, requantized to a common scale,
    summed, requantized to the output, offset, clamped."""
    return _add_or_sub(x1, x2, p, 1)


def sub(x1, x2, p: SubParams):
    """TFLite's int8 SUB: add's steps with the second input's scaled value subtracted."""
    return _add_or_sub(x1, x2, p, -1)


def _add_or_sub(x1, x2, p: AddParams, sign: int):
    _check(x1, p.shape, _act_type(p), "input 1", p)
    _check(x2, p.shape, _act_type(p), "input 2", p)
    lowered = calls.call(p, p.shape, x1, x2)
    if lowered is not None:
        return lowered
    with jax.named_scope(p.scope):
        a = (x1.astype(jnp.int32) + p.input_1_offset) << p.left_shift
        b = (x2.astype(jnp.int32) + p.input_2_offset) << p.left_shift
        s = requantize(a, p.input_1_mult, p.input_1_shift) + sign * requantize(b, p.input_2_mult, p.input_2_shift)
        y = requantize(s, p.out_mult, p.out_shift) + jnp.int32(p.out_offset)
        return jnp.clip(y, p.activation[0], p.activation[1]).astype(_act_type(p))


def mul(x1, x2, p: MulParams):
    """arm_elementwise_mul_s8 (_s16): the offset inputs multiplied (within 255**2, or 2**30 for
    int16: no overflow), requantized to the output, offset, clamped; input 2 broadcast when
    p.shape_2 says so."""
    _check(x1, p.shape, _act_type(p), "input 1", p)
    _check(x2, p.shape if p.shape_2 is None else p.shape_2, _act_type(p), "input 2", p)
    lowered = calls.call(p, p.shape, x1, x2)
    if lowered is not None:
        return lowered
    with jax.named_scope(p.scope):
        prod = (x1.astype(jnp.int32) + p.input_1_offset) * (x2.astype(jnp.int32) + p.input_2_offset)
        y = requantize(prod, p.out_mult, p.out_shift) + jnp.int32(p.out_offset)
        return jnp.clip(y, p.activation[0], p.activation[1]).astype(_act_type(p))


def requantize_s8(x, input_zero_point: int, multiplier: int, shift: int, output_zero_point: int):
    """TFLite's int8 -> int8 QUANTIZE (reference_ops::Requantize): the input less its zero point,
    rescaled by the fixed-point multiplier, the output zero point added, saturated."""
    y = requantize(x.astype(jnp.int32) - jnp.int32(input_zero_point), multiplier, shift)
    return jnp.clip(y + jnp.int32(output_zero_point), -128, 127).astype(jnp.int8)


def mean(x, p: MeanParams):
    """TFLite's int8 (int16) MEAN: the sum over p.axes less the input zero point per element,
    requantized with 1/count folded into the multiplier, offset, clamped (no fused activation)."""
    _check(x, p.input_dims, _act_type(p), "input", p)
    with jax.named_scope(p.scope):
        s = jnp.sum(x.astype(jnp.int32), axis=p.axes, keepdims=p.keep_dims) - jnp.int32(p.input_zero_point * p.count)
        y = requantize(s, p.multiplier, p.shift) + jnp.int32(p.output_zero_point)
        return jnp.clip(y, *int_range(p.activation_bits)).astype(_act_type(p))


ACCUM_BITS = 12  # arm_nn_softmax_common_s8


def softmax(x, p: SoftmaxParams):
    """arm_softmax_s8 over the last axis; output scale 1/256, zero point -128 (output_bits 16:
    arm_softmax_s8_s16, 1/65536 and -32768)."""
    lowered = _softmax_call(x, p, jnp.int8)
    if lowered is not None:
        return lowered
    with jax.named_scope(p.scope):
        xi = x.astype(jnp.int32)
        diff = xi - jnp.max(xi, axis=-1, keepdims=True)
        valid = diff >= p.diff_min
        e = exp_on_negative_values(doubling_high_mult(diff * (1 << p.shift), jnp.int32(p.mult)))
        total = jnp.sum(jnp.where(valid, divide_by_power_of_two(e, ACCUM_BITS), 0), axis=-1, keepdims=True)
        headroom = lax.clz(total)
        # (sum << headroom) - (1 << 31): int32 wraps, leaving the bits below the leading one
        shifted_scale = one_over_one_plus_x_for_x_in_0_1((total << headroom) ^ jnp.int32(-(1 << 31)))
        # TFLite's exponent: num_bits_over_unit + 31 - the output's bits
        bits_over_unit = ACCUM_BITS - headroom + 31 - p.output_bits
        scaled = doubling_high_mult(shifted_scale, e)
        lo, hi = int_range(p.output_bits)
        res = _divide_by_pot_varying(scaled, bits_over_unit) + lo
        out = jnp.where(valid, jnp.clip(res, lo, hi), lo)
        return out.astype(jnp.int16 if p.output_bits == 16 else jnp.int8)


def softmax_s16(x, p: SoftmaxS16Params):
    """arm_softmax_s16 (TFLite's SoftmaxInt16) over the last axis; zero points 0, output scale
    1/32768."""
    lowered = _softmax_call(x, p, jnp.int16)
    if lowered is not None:
        return lowered
    with jax.named_scope(p.scope):
        xi = x.astype(jnp.int32)
        diff = xi - jnp.max(xi, axis=-1, keepdims=True)
        scaled = jnp.clip(requantize(diff, p.mult, p.shift) + 32767, -32768, 32767)
        e = _lut_lookup(scaled, lut_s16.exp_table())
        total = jnp.sum(e, axis=-1, keepdims=True)
        headroom = lax.clz(total)
        # sum << (headroom - 1) has its top bit at 30, rounded to 15 fraction bits: TFLite adds
        # the half in int64, which an int32 cannot (2^31 - 2^13 + 2^13), so the half's bit is added
        # after the shift. (CMSIS-NN v7.0.0 adds it in int32; see cmsis_nn_shim/src/arm_softmax_s16.c)
        t = total << (headroom - 1)
        shifted = (t >> 14) + ((t >> 13) & 1)
        recip = _lut_lookup(jnp.clip(shifted - (1 << 15) - (1 << 16), -32768, 32767),
                            lut_s16.one_over_one_plus_x_table())
        right = 31 - headroom
        # e and recip are at most 32767: the product and its rounding term fit an int32
        out = (e * recip + (jnp.int32(1) << (right - 1))) >> right
        return jnp.clip(out, 0, 32767).astype(jnp.int16)


def _softmax_call(x, p, dtype):
    """A softmax's input checked against its parameters; its CMSIS-NN call where capture wants one."""
    if x.dtype != dtype or x.shape[-1] != p.row_size or x.size != p.num_rows * p.row_size:
        raise ValueError(f"{p.op}: input must be {jnp.dtype(dtype).name} with {p.num_rows} rows of {p.row_size}, "
                         f"got {x.dtype}{list(x.shape)}")
    return calls.call(p, x.shape, x)


def _lut_lookup(value, table):
    """TFLite's LUTLookup on int32 values in [-32768, 32767]: the high 9 bits index the table, the
    low 7 interpolate, rounded; the sum wraps to int16 as the C's does."""
    t = jnp.asarray(np.asarray(table, np.int32))
    index = 256 + (value >> 7)
    base = jnp.take(t, index)
    r = base + (((jnp.take(t, index + 1) - base) * (value & 0x7F) + 64) >> 7)
    return r.astype(jnp.int16).astype(jnp.int32)


def _divide_by_pot_varying(x, exponent):
    """arm_nn_divide_by_power_of_two with a traced exponent in [0, 31] (softmax's per-row one)."""
    mask = (jnp.int32(1) << exponent) - 1
    remainder = x & mask
    result = x >> exponent
    threshold = (mask >> 1) + (result < 0).astype(jnp.int32)
    return result + (remainder > threshold).astype(jnp.int32)


def svdf(x, w_feature, w_time, bias, state, p: SvdfParams):
    """arm_svdf_state_s16_s8 (TFLite's int8 SVDF, params.SvdfParams): one step from `state`.
    x int8 [batch, input_size], w_feature int8 [filters, input_size], w_time int16 [filters,
    memory], bias int32 [units] or None, state int16 [batch, filters * memory] (each filter's
    memory oldest first). Returns (output int8 [batch, units], the new state). With
    p.state_bits 8 (arm_svdf_s8) the time weights and the state are int8."""
    st = jnp.int16 if p.state_bits == 16 else jnp.int8
    _check(x, (p.batch, p.input_size), jnp.int8, "input", p)
    _check(w_feature, (p.filters, p.input_size), jnp.int8, "feature weights", p)
    _check(w_time, (p.filters, p.memory), st, "time weights", p)
    _check(state, p.state_shape, st, "state", p)
    if bias is not None:
        _check(bias, (p.units,), jnp.int32, "bias", p)
    operands = (x, w_feature, w_time, state) + ((bias,) if bias is not None else ())
    lowered = calls.call_with_state(p, (p.batch, p.units), operands, 3)
    if lowered is not None:
        return tuple(lowered)
    with jax.named_scope(p.scope):
        # sum w * (x - zp) in int32, which wraps as the core's does: sum w * x - zp * sum w
        acc = _matmul_nt(x, w_feature) - jnp.int32(p.input_zero_point) * jnp.sum(w_feature, axis=1, dtype=jnp.int32)
        newest = jnp.clip(requantize(acc, p.feature_multiplier, p.feature_shift), *p.state_range).astype(st)
        # every filter's memory moves one place towards its start; the newest value goes last
        old = state.reshape(p.batch, p.filters, p.memory)
        new = jnp.concatenate([old[:, :, 1:], newest[:, :, None]], axis=2)
        t = jnp.sum(new.astype(jnp.int32) * w_time.astype(jnp.int32)[None], axis=2, dtype=jnp.int32)
        u = jnp.sum(t.reshape(p.batch, p.units, p.rank), axis=2, dtype=jnp.int32)
        if bias is not None:
            u = u + bias
        out = jnp.clip(requantize(u, p.output_multiplier, p.output_shift) + jnp.int32(p.output_zero_point), -128, 127)
        return out.astype(jnp.int8), new.reshape(p.state_shape)
