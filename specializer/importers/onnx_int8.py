"""QDQ int8: QuantizeLinear / DequantizeLinear around an op, mapped onto specializer.quant's blocks.

A DequantizeLinear of an int8 activation adds no layer: its value is the int8 array with its
(scale, zero point) attached (Val.deq). A DequantizeLinear of a constant is a weight (DeqConst).
An op whose input is such a value, whose weights are such constants and whose output goes (through
a Relu or Clip, folded into the clamp) to a QuantizeLinear alone becomes one int8 block, its
parameters derived from the scales as TFLite Micro derives a .tflite model's: per-channel
multipliers from double(input scale) x double(filter scale) / double(output scale), TFLite's
QuantizeMultiplier, the int32 bias added as it is (its scale must be input scale x filter
scale). MaxPool, Relu, Reshape, Flatten and Transpose commute with dequantization and stay on the
int8 array. Anything else reads the dequantized float value (onnx.reference's float32 arithmetic)
and a QuantizeLinear of a float value rounds as onnx.reference rounds (x / scale, half to even).

Rounding. onnx.reference computes a QDQ op in float32 and rounds half to even; the blocks
compute CMSIS-NN's integer arithmetic (an exact int32 accumulator, a fixed-point multiplier, a
rounding shift that rounds half away from zero; the average pool's halves away from zero; an
integer exp in softmax). Where the exact rescaled value is not within float32's error of a half,
both give the same int8; at such ties and near-ties they can differ by one. The reader makes the
blocks; capture compares them with onnx.reference and refuses a model whose int8 outputs differ
(see docs/int8.md, "ONNX QDQ models").
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from specializer.importers.onnx_float import clip_bounds, conv_filter, gemm_weight
from specializer.importers.onnx_layer import NHWC, DeqConst, Flat, NodeContext, Val, identity, ints, spatial_rank4, \
    window
from specializer.importers.tflite_int8 import tflite_multiplier
from specializer.quant import blocks
from specializer.quant.graph import QuantizeError
from specializer.quant.params import (AddParams, ConvParams, DepthwiseParams, FullyConnectedParams, MulParams,
                                      PoolParams)
from specializer.quant.ptq import ADD_LEFT_SHIFT, QParams, softmax_params

# a bias's scale must be input scale x filter scale to this relative precision (float32's)
BIAS_SCALE_RTOL = 1e-6


# ---------------------------------------------------------------- QuantizeLinear / DequantizeLinear

def _scale_zp(c: NodeContext, what: str, per_tensor: bool = True) -> tuple[np.ndarray, np.ndarray, int]:
    """(scales float32, zero points, axis) of a Q/DQ node."""
    c.check_attrs({"axis", "block_size", "saturate", "output_dtype", "precision"})
    if int(c.attr("block_size", 0)):
        raise c.refuse("blocked quantization (block_size) is not supported")
    if c.attr("output_dtype", 0) or c.attr("precision", 0):
        raise c.refuse("output_dtype / precision attributes are not supported")
    s = np.asarray(c.const(1, "the scale"))
    if s.dtype != np.float32:
        raise c.refuse(f"scale of type {s.dtype} (the reader takes float32)")
    bad = s.reshape(-1)[~(np.isfinite(s) & (s > 0)).reshape(-1)]
    if bad.size:
        raise c.refuse(f"scale {float(bad[0])!r} is not a positive finite number")
    zp = np.asarray(c.const(2, "the zero point")) if c.present(2) else None
    if zp is None:
        raise c.refuse("no zero point (uint8 by default): the reader takes int8 QDQ only")
    if zp.dtype != np.int8 and not (zp.dtype == np.int32 and c.node.op == "DequantizeLinear"):
        raise c.refuse(f"zero point of type {zp.dtype}: the reader takes int8 QDQ only (uint8 is not supported)")
    if zp.shape != s.shape:
        raise c.refuse(f"zero point of shape {list(zp.shape)} for scales of {list(s.shape)}")
    if per_tensor and s.size != 1:
        raise c.refuse(f"{s.size} scales for an activation ({what}): the reader takes per-tensor activations")
    return s.reshape(-1), zp.reshape(-1).astype(np.int64), int(c.attr("axis", 1))


def qparams(s: np.ndarray, zp: np.ndarray) -> QParams:
    return QParams(float(s[0]), int(zp[0]))


def quantize_float(c: NodeContext, x: Val, q: QParams) -> Val:
    """A QuantizeLinear of a float value, as onnx.reference computes it: rint(x / scale) + zero
    point (float32 division, half to even), saturated to int8."""
    s, z = np.float32(q.scale), q.zero_point
    x = c.b.dequantized(x)
    return c.emit((x,), c.out(x.layout, "int8", q),
                  lambda a: jnp.clip(jnp.round(a / s).astype(jnp.int32) + z, -128, 127).astype(jnp.int8))


def quantize_linear(c: NodeContext) -> None:
    s, zp, _ = _scale_zp(c, "QuantizeLinear")
    q = qparams(s, zp)
    x = c.act(0)
    if x.deq and x.quant == q:  # quantize(dequantize(v)) with the same parameters is v
        c.alias(c.node.outputs[0], Val(x.key, x.shape, "int8", x.layout, q, False))
        return
    quantize_float(c, x, q)


def dequantize_linear(c: NodeContext) -> None:
    name = c.name(0)
    if c.is_const(0):
        q = c.const(0, "the integers")
        if q.dtype not in (np.int8, np.int32):
            raise c.refuse(f"a constant of type {q.dtype} (the reader takes int8 weights and int32 biases)")
        s, zp, axis = _scale_zp(c, "a constant", per_tensor=False)
        if s.size > 1 and not -q.ndim <= axis < q.ndim or s.size not in (1, q.shape[axis % max(q.ndim, 1)]):
            raise c.refuse(f"{s.size} scales along axis {axis} of a constant of shape {list(q.shape)} (it takes 1, "
                           f"or one per channel: {q.shape[axis] if -q.ndim <= axis < q.ndim else 'no such axis'})")
        c.b.deq_consts[c.node.outputs[0]] = DeqConst(q, s, zp, axis % max(q.ndim, 1))
        return
    x = c.act(0)
    if x.dtype != "int8" or x.deq:
        raise c.refuse(f"input '{name}' is {'a dequantized value' if x.deq else x.dtype}; the reader takes int8")
    s, zp, _ = _scale_zp(c, "DequantizeLinear")
    q = qparams(s, zp)
    if x.quant is not None and x.quant != q:
        raise c.refuse(f"scale/zero point {q} differ from the QuantizeLinear's {x.quant}")
    c.b.vals[name] = Val(x.key, x.shape, x.dtype, x.layout, q, False)  # an int8 graph input learns its own
    c.alias(c.node.outputs[0], Val(x.key, x.shape, "int8", x.layout, q, True))


QDQ = {"QuantizeLinear": quantize_linear, "DequantizeLinear": dequantize_linear}


# ---------------------------------------------------------------- int8 ops

def quantized_input(c: NodeContext) -> bool:
    n = c.name(0)
    return n in c.b.vals and c.b.vals[n].deq


def _requantized_output(c: NodeContext) -> tuple[str, QParams, tuple[float | None, float | None], list] | None:
    """(the QuantizeLinear's output name, its quantization, the folded activation's float bounds,
    the nodes consumed) when the op's output goes, through at most one Relu or Clip, to one
    QuantizeLinear alone; else None."""
    value, bounds, used = c.node.outputs[0], (None, None), []
    nxt = c.sole_consumer(value)
    if nxt is not None and nxt.op in ("Relu", "Clip"):
        act = NodeContext(c.b, nxt)
        bounds = (0.0, None) if nxt.op == "Relu" else clip_bounds(act)
        used.append(nxt)
        value = nxt.outputs[0]
        nxt = c.sole_consumer(value)
    if nxt is None or nxt.op != "QuantizeLinear":
        return None
    qc = NodeContext(c.b, nxt)
    s, zp, _ = _scale_zp(qc, "QuantizeLinear")
    used.append(nxt)
    return nxt.outputs[0], qparams(s, zp), bounds, used


def _bound(b: float | None, q: QParams, default: int) -> int:
    """The int8 a float bound quantizes to (onnx.reference's rounding), saturated."""
    if b is None:
        return default
    return int(np.clip(np.rint(np.float32(b) / np.float32(q.scale)) + q.zero_point, -128, 127))


def _clamp(q: QParams, bounds) -> tuple[int, int]:
    """quantize(clip(y, lo, hi)) = clip(quantize(y), quantize(lo), quantize(hi)): quantizing is monotone."""
    return _bound(bounds[0], q, -128), _bound(bounds[1], q, 127)


def _multipliers(in_s: float, w_scales, out_s: float) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ms = [tflite_multiplier(in_s * float(s) / out_s) for s in w_scales]  # double, as TFLite Micro
    return tuple(m for m, _ in ms), tuple(s for _, s in ms)


def _filter(c: NodeContext, k: int, axis: int, n: int) -> DeqConst | None:
    """Input k, a DequantizeLinear'd int8 constant with zero points 0 and 1 or n scales along axis."""
    w = c.b.deq_consts.get(c.name(k))
    if w is None or w.q.dtype != np.int8 or np.any(w.zero_points != 0):
        return None
    if w.scales.size != 1 and (w.scales.size != n or w.axis != axis):
        return None
    return w


def _bias(c: NodeContext, k: int, in_s: float, w: DeqConst, n: int) -> tuple[np.ndarray | None, bool]:
    """(the int32 bias or None, whether the input fits: absent, or int32 at input x filter scale)."""
    if not c.present(k):
        return None, True
    b = c.b.deq_consts.get(c.name(k))
    if b is None or b.q.dtype != np.int32 or np.any(b.zero_points != 0) or b.q.shape != (n,):
        return None, False
    want = np.float64(in_s) * w.scales.astype(np.float64)
    have = b.scales.astype(np.float64)
    if not np.allclose(have, np.broadcast_to(want, have.shape) if have.size > 1 else want, rtol=BIAS_SCALE_RTOL,
                       atol=0):
        return None, False
    return b.q.astype(np.int32), True


def _finish(c: NodeContext, x: Val, out_name: str, q: QParams, layout, block, run, weights, used) -> bool:
    for n in used:
        c.b.done.add(n.index)
    out = Val(out_name, c.out_shape, "int8", layout, q, False)
    c.emit((x,), out, run, weights, block)
    return True


def conv(c: NodeContext) -> bool:
    x = c.act(0)
    tail = _requantized_output(c)
    if tail is None:
        return False
    out_name, q, bounds, used = tail
    wq = c.b.deq_consts.get(c.name(1))
    if wq is None:
        return False
    group, dil, strides, pads = conv_filter(c, x, wq.q)
    o, ig, kh, kw = wq.q.shape
    depthwise = group > 1 and ig == 1 and group == x.shape[1]
    if group > 1 and not depthwise:
        raise c.refuse(f"int8 grouped convolution (group={group}, not depthwise) is not supported")
    w = _filter(c, 1, 0, o)
    if w is None:
        raise c.refuse("int8 filter must be a DequantizeLinear'd int8 constant, zero points 0, one scale or one "
                       "per output channel (axis 0)")
    bias, ok = _bias(c, 2, x.quant.scale, w, o)
    if not ok:
        raise c.refuse("bias must be a DequantizeLinear'd int32 constant at input scale x filter scale, zero point 0")
    xin = c.b.in_layout(x, NHWC)
    out_shape = c.out_shape
    in_dims, out_dims = tuple(xin.shape[i] for i in NHWC), tuple(out_shape[i] for i in NHWC)
    mults, shifts = _multipliers(x.quant.scale, w.scales, q.scale)
    common = dict(input_dims=in_dims, output_dims=out_dims, stride=strides, padding=pads,
                  input_offset=-x.quant.zero_point, output_offset=q.zero_point, activation=_clamp(q, bounds),
                  multipliers=mults, shifts=shifts, dilation=dil)
    if depthwise:
        wt = w.q.transpose(1, 2, 3, 0)  # [O, 1, KH, KW] -> [1, KH, KW, O]
        p = DepthwiseParams(filter_dims=wt.shape, ch_mult=o // group, **common)
        fn = blocks.depthwise_conv2d
    else:
        wt = w.q.transpose(0, 2, 3, 1)  # OIHW -> OHWI
        p = ConvParams(filter_dims=wt.shape, **common)
        fn = blocks.conv2d
    names = (c.b.weight(c.wname("w"), wt),) + ((c.b.weight(c.wname("b"), bias),) if bias is not None else ())
    return _finish(c, xin, out_name, q, NHWC, p, lambda a, wt_, b=None: fn(a, wt_, b, p), names, used)


def gemm(c: NodeContext) -> bool:
    x = c.act(0)
    tail = _requantized_output(c)
    if tail is None or x.rank != 2:
        return False
    out_name, q, bounds, used = tail
    if c.node.op == "Gemm":
        c.check_attrs({"alpha", "beta", "transA", "transB", "broadcast"})
        if int(c.attr("transA", 0)) or c.attr("alpha", 1.0) != 1.0 or c.attr("beta", 1.0) != 1.0:
            raise c.refuse("int8 Gemm with transA=1, alpha or beta other than 1 is not supported")
    wq = c.b.deq_consts.get(c.name(1))
    if wq is None or wq.q.ndim != 2:
        return False
    trans_b = c.node.op == "Gemm" and int(c.attr("transB", 0))
    n_out = wq.q.shape[0] if trans_b else wq.q.shape[1]
    w = _filter(c, 1, 0 if trans_b else 1, n_out)
    if w is None:
        raise c.refuse("int8 weight must be a DequantizeLinear'd int8 constant, zero points 0, one scale or one "
                       "per output")
    kn = gemm_weight(c, w.q)  # [K, N]
    if x.shape[1] != kn.shape[0]:
        raise c.refuse(f"input {list(x.shape)} does not fit a weight of {list(kn.shape)}")
    if isinstance(x.layout, Flat):
        kn = kn[x.layout.columns()]
    else:
        x = c.b.plain(x)
    bias, ok = _bias(c, 2, x.quant.scale, w, n_out) if c.node.op == "Gemm" else (None, True)
    if not ok:
        raise c.refuse("bias must be a DequantizeLinear'd int32 constant of one value per output, at input scale "
                       "x weight scale, zero point 0")
    mults, shifts = _multipliers(x.quant.scale, w.scales, q.scale)
    batch, n_in = x.shape
    p = FullyConnectedParams(batch=batch, in_features=n_in, out_features=n_out, input_offset=-x.quant.zero_point,
                             output_offset=q.zero_point, activation=_clamp(q, bounds), multipliers=mults,
                             shifts=shifts)
    names = (c.b.weight(c.wname("w"), np.ascontiguousarray(kn.T)),)  # [out, in]
    names += (c.b.weight(c.wname("b"), bias),) if bias is not None else ()
    return _finish(c, x, out_name, q, identity(2), p, lambda a, wt, b=None: blocks.fully_connected(a, wt, b, p),
                   names, used)


def _same(c: NodeContext, x: Val, q: QParams, what: str) -> None:
    if x.quant != q:
        raise c.refuse(f"int8 {what} with input quantization {x.quant} and output {q} (they must be equal)")


def avg_pool(c: NodeContext) -> bool:
    x = c.act(0)
    tail = _requantized_output(c)
    if tail is None:
        return False
    out_name, q, bounds, used = tail
    _same(c, x, q, c.node.op)
    spatial_rank4(c, x)
    xin = c.b.in_layout(x, NHWC)
    if c.node.op == "GlobalAveragePool":
        c.check_attrs(set())
        k, strides, pads = tuple(x.shape[2:4]), (1, 1), ((0, 0), (0, 0))
    else:
        c.check_attrs({"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"})
        k = ints(c, "kernel_shape", None)
        if k is None or ints(c, "dilations", (1, 1)) != (1, 1):
            raise c.refuse("int8 AveragePool needs kernel_shape and no dilation")
        strides, pads = window(c, x, k)
        if int(c.attr("count_include_pad", 0)) and any(v for pair in pads for v in pair):
            raise c.refuse("int8 AveragePool with count_include_pad=1 and padding is not supported")
    out_dims = tuple(c.out_shape[i] for i in NHWC)
    p = PoolParams(kind="avg", input_dims=tuple(x.shape[i] for i in NHWC), filter=tuple(k),
                   output_dims=out_dims, stride=strides, padding=pads, activation=_clamp(q, bounds))
    return _finish(c, xin, out_name, q, NHWC, p, lambda a: blocks.avg_pool(a, p), (), used)


def max_pool(c: NodeContext) -> bool:
    """MaxPool of a dequantized value: the int8 max pool, still dequantized (exact: dequantizing
    is monotone)."""
    c.check_attrs({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"})
    if len([o for o in c.node.outputs if o]) > 1:
        raise c.refuse("the Indices output is not supported")
    x = c.act(0)
    spatial_rank4(c, x)
    k = ints(c, "kernel_shape", None)
    if k is None or ints(c, "dilations", (1, 1)) != (1, 1):
        return False
    strides, pads = window(c, x, k)
    xin = c.b.in_layout(x, NHWC)
    p = PoolParams(kind="max", input_dims=tuple(x.shape[i] for i in NHWC), filter=tuple(k),
                   output_dims=tuple(c.out_shape[i] for i in NHWC), stride=strides, padding=pads,
                   activation=(-128, 127))
    c.emit((xin,), c.out(NHWC, "int8", x.quant, True), lambda a: blocks.max_pool(a, p), (), p)
    return True


def relu(c: NodeContext) -> bool:
    """Relu / Clip of a dequantized value: a clamp of the int8 array, still dequantized."""
    x = c.act(0)
    lo, hi = (0.0, None) if c.node.op == "Relu" else clip_bounds(c)
    # clip(s (q - z), lo, hi) = s (clip(q, z + lo / s, z + hi / s) - z) only where the bounds are
    # on the int8 grid
    bounds = []
    for b, d in ((lo, -128), (hi, 127)):
        if b is None:
            bounds.append(d)
            continue
        k = np.float32(b) / np.float32(x.quant.scale)
        if k != np.rint(k):
            return False
        bounds.append(int(np.clip(np.rint(k) + x.quant.zero_point, -128, 127)))
    lo_q, hi_q = bounds
    c.emit((x,), c.out(x.layout, "int8", x.quant, True), lambda a: jnp.clip(a, lo_q, hi_q).astype(jnp.int8))
    return True


def _binary(c: NodeContext, make_params, block) -> bool:
    """An elementwise op of two dequantized int8 activations of one shape, requantized: the
    block make_params(a, b, q, bounds) says, on the two in one layout."""
    if not all(c.name(k) in c.b.vals and c.b.vals[c.name(k)].deq for k in (0, 1)):
        return False
    tail = _requantized_output(c)
    a, b = c.act(0), c.act(1)
    if tail is None or a.shape != b.shape or a.shape != c.out_shape:
        return False
    out_name, q, bounds, used = tail
    if isinstance(a.layout, Flat) and b.layout != a.layout:
        a, b = c.b.plain(a), c.b.plain(b)
    else:
        b = c.b.in_layout(b, a.layout)
    p = make_params(a, b, q, bounds)
    for n in used:
        c.b.done.add(n.index)
    c.emit((a, b), Val(out_name, c.out_shape, "int8", a.layout, q, False), lambda x1, x2: block(x1, x2, p), (), p)
    return True


def _block_shape(a: Val) -> tuple:
    return tuple(a.shape[i] for i in a.layout) if not isinstance(a.layout, Flat) else a.shape


def add(c: NodeContext) -> bool:
    def params(a, b, q, bounds):
        s1, s2 = a.quant.scale, b.quant.scale
        twice = 2 * max(s1, s2)
        (m1, sh1), (m2, sh2) = tflite_multiplier(s1 / twice), tflite_multiplier(s2 / twice)
        mo, so = tflite_multiplier(twice / ((1 << ADD_LEFT_SHIFT) * q.scale))
        if so > 0:
            raise c.refuse(f"int8 Add: output scale {q.scale} is too small for the inputs' (the multiplier must be "
                           "below 1)")
        return AddParams(shape=_block_shape(a), input_1_offset=-a.quant.zero_point, input_1_mult=m1,
                         input_1_shift=sh1, input_2_offset=-b.quant.zero_point, input_2_mult=m2, input_2_shift=sh2,
                         left_shift=ADD_LEFT_SHIFT, out_offset=q.zero_point, out_mult=mo, out_shift=so,
                         activation=_clamp(q, bounds))
    return _binary(c, params, blocks.add)


def mul(c: NodeContext) -> bool:
    """Mul: arm_elementwise_mul_s8 with the multiplier of the input scales' product over the
    output's (TFLite's MUL)."""
    def params(a, b, q, bounds):
        m, sh = tflite_multiplier(float(a.quant.scale) * float(b.quant.scale) / float(q.scale))
        return MulParams(shape=_block_shape(a), input_1_offset=-a.quant.zero_point, input_2_offset=-b.quant.zero_point,
                         out_offset=q.zero_point, out_mult=m, out_shift=sh, activation=_clamp(q, bounds))
    return _binary(c, params, blocks.mul)


def softmax(c: NodeContext) -> bool:
    x = c.act(0)
    tail = _requantized_output(c)
    if tail is None or tail[2] != (None, None):
        return False
    out_name, q, _, used = tail
    c.check_attrs({"axis"})
    axis = int(c.attr("axis", 1 if c.g.opset < 13 else -1)) % x.rank
    if axis != x.rank - 1:
        return False
    if q.zero_point != -128 or abs(q.scale - 1 / 256) > 1e-3 / 256:
        raise c.refuse(f"int8 Softmax output scale {q.scale} / zero point {q.zero_point} (the int8 softmax's is "
                       "1/256, -128)")
    x = c.b.plain(x)
    try:
        p = softmax_params(x.quant.scale, int(np.prod(x.shape[:-1])), x.shape[-1], 1.0)
    except (QuantizeError, ValueError) as e:
        raise c.refuse(str(e)) from None
    return _finish(c, x, out_name, q, identity(x.rank), p, lambda a: blocks.softmax(a, p), (), used)


OPS = {"Conv": conv, "Gemm": gemm, "MatMul": gemm, "AveragePool": avg_pool, "GlobalAveragePool": avg_pool,
       "MaxPool": max_pool, "Relu": relu, "Clip": relu, "Add": add, "Mul": mul, "Softmax": softmax}
