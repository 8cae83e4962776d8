"""ONNX's float32 ops as plain JAX, in the layouts onnx_layer.py describes: convolutions and
pools in NHWC (their filters re-laid out once, at read time), Gemm/MatMul on 2-D values (their
weight rows permuted when the input is a flattened NHWC value), elementwise ops in whatever
layout their input has. BatchNormalization right after a Conv is folded into the Conv's filter
and bias at read time."""

from __future__ import annotations

import numpy as np
from jax import lax
import jax
import jax.numpy as jnp

from specializer.importers.onnx_layer import (NHWC, Flat, NodeContext, Val, identity, inverse, ints, spatial_rank4,
                                              window)

HIGHEST = lax.Precision.HIGHEST


# ---------------------------------------------------------------- convolution and BatchNormalization

def conv_filter(c: NodeContext, x: Val, w: np.ndarray) -> tuple[int, tuple[int, int], tuple, tuple]:
    """(group, dilations, strides, pads) of a Conv with filter w [O, I/group, KH, KW], checked."""
    c.check_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    spatial_rank4(c, x)
    if w.ndim != 4:
        raise c.refuse(f"filter of shape {list(w.shape)}: the reader takes 2-D convolutions only")
    o, ig, kh, kw = w.shape
    group = int(c.attr("group", 1))
    if group < 1 or x.shape[1] != ig * group or o % group:
        raise c.refuse(f"filter {list(w.shape)} does not fit input {list(x.shape)} with group={group}")
    ks = c.attr("kernel_shape")
    if ks is not None and tuple(ks) != (kh, kw):
        raise c.refuse(f"kernel_shape={list(ks)} differs from the filter's {[kh, kw]}")
    dil = ints(c, "dilations", (1, 1))
    strides, pads = window(c, x, (kh, kw), dilations=dil)
    return group, dil, strides, pads


def batchnorm_scale_shift(c: NodeContext, first: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """A BatchNormalization's per-channel (scale, shift), computed in float64: y = x * scale + shift."""
    c.check_attrs({"epsilon", "momentum", "training_mode", "spatial", "is_test", "consumed_inputs"})
    if int(c.attr("training_mode", 0)) or len([o for o in c.node.outputs if o]) > 1:
        raise c.refuse("training mode (running statistics as outputs) is not supported")
    if int(c.attr("spatial", 1)) != 1:
        raise c.refuse("spatial=0 is not supported")
    gamma, beta, mean, var = (c.float_const(first + k).astype(np.float64) for k in range(4))
    eps = float(np.float32(c.attr("epsilon", 1e-5)))
    scale = gamma / np.sqrt(var + eps)
    return scale, beta - mean * scale


def _fold_batchnorm(c: NodeContext, w: np.ndarray, b: np.ndarray | None):
    """(filter, bias, output value name): a BatchNormalization that alone reads the Conv's output
    folded into its filter and bias (float64, then float32)."""
    out = c.node.outputs[0]
    bn = c.sole_consumer(out)
    if bn is None or bn.op != "BatchNormalization" or bn.inputs[0] != out:
        return w, b, out
    bc = NodeContext(c.b, bn)
    if not all(bc.is_const(k) for k in range(1, 5)):
        return w, b, out
    scale, shift = batchnorm_scale_shift(bc)
    if scale.shape != (w.shape[0],):
        raise bc.refuse(f"{scale.size} channels after a Conv of {w.shape[0]}")
    w = (w.astype(np.float64) * scale[:, None, None, None]).astype(np.float32)
    b = ((np.zeros(w.shape[0]) if b is None else b.astype(np.float64)) * scale + shift).astype(np.float32)
    c.b.done.add(bn.index)
    return w, b, bn.outputs[0]


def conv(c: NodeContext) -> None:
    x = c.fact(0)
    w = c.float_const(1, "the filter")
    group, dil, strides, pads = conv_filter(c, x, w)
    b = c.float_const(2, "the bias") if c.present(2) else None
    if b is not None and b.shape != (w.shape[0],):
        raise c.refuse(f"bias of shape {list(b.shape)} for {w.shape[0]} output channels")
    w, b, out_name = _fold_batchnorm(c, w, b)
    names = (c.b.weight(c.wname("w"), w.transpose(0, 2, 3, 1)),)  # OIHW -> OHWI
    if b is not None:
        names += (c.b.weight(c.wname("b"), b),)

    def run(a, wt, bias=None):
        y = lax.conv_general_dilated(a, wt, strides, pads, rhs_dilation=dil, dimension_numbers=("NHWC", "OHWI", "NHWC"),
                                     feature_group_count=group, precision=HIGHEST)
        return y if bias is None else y + bias
    out = Val(out_name, c.out_shape, "float32", NHWC)
    c.emit((c.b.in_layout(x, NHWC),), out, run, names)


def conv_transpose_pads(c: NodeContext, x: Val, kernel, strides, dil, out_pad) -> list[tuple[int, int]]:
    """ConvTranspose's (begin, end) padding per spatial axis, by the operator's rules: from
    output_shape or auto_pad SAME_* (the total split, the odd pixel at the end for SAME_UPPER), else
    pads; the output size must be what they give."""
    auto = c.attr("auto_pad", "NOTSET")
    shape = c.attr("output_shape")
    if shape is not None and len(shape) not in (2, 4):
        raise c.refuse(f"output_shape={list(shape)} is not 2-D spatial")
    pads, want = [], []
    for i, (size, k, s, d, op) in enumerate(zip(x.shape[2:4], kernel, strides, dil, out_pad)):
        full = s * (size - 1) + op + (k - 1) * d + 1
        if shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
            out = int(shape[-2 + i]) if shape is not None else size * s
            total = full - out
            begin = total // 2 if auto == "SAME_UPPER" else total - total // 2
            pads.append((begin, total - begin))
        elif auto == "VALID":
            pads.append((0, 0))
        elif auto == "NOTSET":
            p = ints(c, "pads", (0, 0, 0, 0), 4)
            pads.append((p[i], p[i + 2]))
        else:
            raise c.refuse(f"auto_pad={auto} is not supported")
        want.append(full - sum(pads[-1]))
    out = c.out_shape
    if len(out) != 4 or tuple(out[2:]) != tuple(want) or min(want) < 1:
        raise c.refuse(f"output shape {list(out)} does not match the padding (expected spatial {want})")
    return pads


def conv_transpose(c: NodeContext) -> None:
    """ConvTranspose, filter W [C_in, C_out/group, KH, KW]: out_y = in_y * stride + ky * dilation -
    pad_begin. As XLA sees it: the input dilated by the stride, the filter reversed (at read time,
    with its groups regrouped to [C_out, C_in/group]), padded (k-1)*d - pad before."""
    c.check_attrs({"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads",
                   "strides"})
    x = c.fact(0)
    spatial_rank4(c, x)
    w = c.float_const(1, "the filter")
    if w.ndim != 4:
        raise c.refuse(f"filter of shape {list(w.shape)}: the reader takes 2-D transposed convolutions only")
    cin, og, kh, kw = w.shape
    group = int(c.attr("group", 1))
    if group < 1 or x.shape[1] != cin or cin % group:
        raise c.refuse(f"filter {list(w.shape)} does not fit input {list(x.shape)} with group={group}")
    ks = c.attr("kernel_shape")
    if ks is not None and tuple(ks) != (kh, kw):
        raise c.refuse(f"kernel_shape={list(ks)} differs from the filter's {[kh, kw]}")
    strides, dil = ints(c, "strides", (1, 1)), ints(c, "dilations", (1, 1))
    out_pad = ints(c, "output_padding", (0, 0))
    if min(strides) < 1 or min(dil) < 1 or min(out_pad) < 0:
        raise c.refuse(f"strides {list(strides)} / dilations {list(dil)} / output_padding {list(out_pad)} "
                       "out of range")
    pads = conv_transpose_pads(c, x, (kh, kw), strides, dil, out_pad)
    b = c.float_const(2, "the bias") if c.present(2) else None
    if b is not None and b.shape != (og * group,):
        raise c.refuse(f"bias of shape {list(b.shape)} for {og * group} output channels")
    # [g, C_in/g, C_out/g, KH, KW] -> [C_out, KH, KW, C_in/g], spatially reversed: OHWI of the conv
    wt = w.reshape(group, cin // group, og, kh, kw).transpose(0, 2, 3, 4, 1).reshape(group * og, kh, kw, cin // group)
    names = (c.b.weight(c.wname("w"), np.ascontiguousarray(wt[:, ::-1, ::-1, :])),)
    if b is not None:
        names += (c.b.weight(c.wname("b"), b),)
    xla_pads = [((k - 1) * d - lo, (k - 1) * d - hi + op)
                for k, d, (lo, hi), op in zip((kh, kw), dil, pads, out_pad)]

    def run(a, wt, bias=None):
        y = lax.conv_general_dilated(a, wt, (1, 1), xla_pads, lhs_dilation=strides, rhs_dilation=dil,
                                     dimension_numbers=("NHWC", "OHWI", "NHWC"), feature_group_count=group,
                                     precision=HIGHEST)
        return y if bias is None else y + bias
    c.emit((c.b.in_layout(x, NHWC),), Val(c.node.outputs[0], c.out_shape, "float32", NHWC), run, names)


def batchnorm(c: NodeContext) -> None:
    """A BatchNormalization no Conv absorbed: a per-channel multiply-add."""
    x = c.fact(0)
    scale, shift = batchnorm_scale_shift(c)
    if x.rank < 2 or scale.shape != (x.shape[1],):
        raise c.refuse(f"{scale.size} channels for an input {list(x.shape)}")
    if isinstance(x.layout, Flat):
        x = c.b.plain(x)
    shape = [1] * x.rank
    shape[x.layout.index(1)] = -1
    names = (c.b.weight(c.wname("s"), scale.astype(np.float32).reshape(shape)),
             c.b.weight(c.wname("t"), shift.astype(np.float32).reshape(shape)))
    c.emit((x,), c.out(x.layout), lambda a, s, t: a * s + t, names)


# ---------------------------------------------------------------- dense

def dense_rows(c: NodeContext, x: Val, w: np.ndarray) -> tuple[Val, np.ndarray]:
    """(x as the dense layer reads it, w [K, N] with its rows in x's column order): a flattened
    NHWC input keeps its layout and the weight's rows are permuted instead."""
    if x.rank != 2:
        raise c.refuse(f"input of rank {x.rank} {list(x.shape)}: the reader takes a 2-D input here")
    if x.shape[1] != w.shape[0]:
        raise c.refuse(f"input {list(x.shape)} does not fit a weight of {list(w.shape)}")
    if isinstance(x.layout, Flat):
        return x, w[x.layout.columns()]
    return c.b.plain(x), w


def gemm_weight(c: NodeContext, b: np.ndarray) -> np.ndarray:
    """Gemm's B as [K, N], or MatMul's."""
    if b.ndim != 2:
        raise c.refuse(f"weight of rank {b.ndim} {list(b.shape)}: the reader takes a 2-D constant weight")
    return b.T if c.node.op == "Gemm" and int(c.attr("transB", 0)) else b


def gemm(c: NodeContext) -> None:
    c.check_attrs({"alpha", "beta", "transA", "transB", "broadcast"})
    if int(c.attr("transA", 0)):
        raise c.refuse("transA=1 is not supported")
    x = c.fact(0)
    w = gemm_weight(c, c.float_const(1, "B"))
    x, w = dense_rows(c, x, w)
    alpha, beta = np.float32(c.attr("alpha", 1.0)), np.float32(c.attr("beta", 1.0))
    names = (c.b.weight(c.wname("w"), w),)
    if c.present(2):
        bias = c.float_const(2, "C")
        try:
            np.broadcast_to(bias, c.out_shape)
        except ValueError:
            raise c.refuse(f"C of shape {list(bias.shape)} does not broadcast to {list(c.out_shape)}") from None
        names += (c.b.weight(c.wname("b"), (bias * beta).astype(np.float32)),)

    def run(a, wt, bias=None):
        y = jnp.matmul(a, wt, precision=HIGHEST)
        y = y if alpha == 1 else y * alpha
        return y if bias is None else y + bias
    c.emit((x,), c.out(identity(2)), run, names)


def matmul(c: NodeContext) -> None:
    x = c.fact(0)
    w = gemm_weight(c, c.float_const(1, "B"))
    if x.rank > 2:
        if x.shape[-1] != w.shape[0]:
            raise c.refuse(f"input {list(x.shape)} does not fit a weight of {list(w.shape)}")
        x = c.b.plain(x)
    else:
        x, w = dense_rows(c, x, w)
    names = (c.b.weight(c.wname("w"), w),)
    c.emit((x,), c.out(identity(len(c.out_shape))), lambda a, wt: jnp.matmul(a, wt, precision=HIGHEST), names)


# ---------------------------------------------------------------- elementwise

def const_in_layout(c: NodeContext, k: np.ndarray, v: Val) -> np.ndarray:
    """A constant that broadcasts against v's ONNX shape, in v's layout (still broadcasting)."""
    try:
        np.broadcast_to(k, np.broadcast_shapes(k.shape, v.shape))
        if np.broadcast_shapes(k.shape, v.shape) != v.shape:
            raise ValueError
    except ValueError:
        raise c.refuse(f"a constant of shape {list(k.shape)} does not broadcast to {list(v.shape)}") from None
    k = k.reshape((1,) * (v.rank - k.ndim) + k.shape)
    if isinstance(v.layout, Flat):
        return np.broadcast_to(k, (k.shape[0], v.shape[1]))[:, v.layout.columns()]
    return k.transpose(v.layout)


def add(c: NodeContext) -> None:
    c.check_attrs({"broadcast", "axis"} if c.g.opset < 7 else set())
    if c.attr("broadcast", 0) and c.attr("axis") is not None:
        raise c.refuse("broadcast with axis (Add-6) is not supported")
    consts = [c.is_const(k) for k in (0, 1)]
    if all(consts):
        raise c.refuse("both inputs are constants")
    if any(consts):
        v = c.fact(consts.index(False))
        k = c.float_const(consts.index(True)).astype(np.float32)
        if v.shape != c.out_shape:
            raise c.refuse(f"the constant widens {list(v.shape)} to {list(c.out_shape)}")
        name = c.b.weight(c.wname("c"), const_in_layout(c, k, v))
        c.emit((v,), c.out(v.layout), lambda a, kk: a + kk, (name,))
        return
    a, b = c.fact(0), c.fact(1)
    if a.shape == b.shape == c.out_shape and not (isinstance(a.layout, Flat) and b.layout != a.layout):
        b = c.b.in_layout(b, a.layout)
    else:  # broadcasting, or a flattened value against another layout: the file's layout
        a, b = c.b.plain(a), c.b.plain(b)
    c.emit((a, b), c.out(a.layout), lambda p, q: p + q)


def relu(c: NodeContext) -> None:
    c.check_attrs(set())
    x = c.fact(0)
    c.emit((x,), c.out(x.layout), lambda a: jnp.maximum(a, 0.0))


def _activation(attrs: dict, fn):
    """An elementwise activation whose attributes (name -> ONNX's default) go to fn(a, **attrs),
    read as float32 as onnx.reference reads them; the layout is unchanged."""
    def build(c: NodeContext) -> None:
        c.check_attrs(set(attrs))
        x = c.fact(0)
        kw = {k: float(np.float32(c.attr(k, d))) for k, d in attrs.items()}
        c.emit((x,), c.out(x.layout), lambda a: fn(a, **kw))
    return build


# Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish as the ONNX operators define them
ACTIVATIONS = {
    "Sigmoid": _activation({}, lambda a: jax.nn.sigmoid(a)),
    "Tanh": _activation({}, lambda a: jnp.tanh(a)),
    "LeakyRelu": _activation({"alpha": 0.01}, lambda a, alpha: jnp.where(a >= 0, a, jnp.float32(alpha) * a)),
    "HardSigmoid": _activation({"alpha": 0.2, "beta": 0.5},
                               lambda a, alpha, beta: jnp.clip(jnp.float32(alpha) * a + jnp.float32(beta), 0.0, 1.0)),
    "HardSwish": _activation({}, lambda a: a * jnp.clip(a * jnp.float32(1 / 6) + 0.5, 0.0, 1.0)),
}


def clip_bounds(c: NodeContext) -> tuple[float | None, float | None]:
    """Clip's (min, max), None where absent: attributes before opset 11, constant inputs after."""
    if c.g.opset < 11:
        c.check_attrs({"min", "max"})
        lo, hi = c.attr("min"), c.attr("max")
    else:
        c.check_attrs(set())
        lo, hi = ((c.const(k, "a bound").item() if c.const(k, "a bound").size == 1 else c.refuse("a bound is not a scalar"))
                  if c.present(k) else None for k in (1, 2))
    return (None if lo is None else float(np.float32(lo))), (None if hi is None else float(np.float32(hi)))


def clip(c: NodeContext) -> None:
    x = c.fact(0)
    lo, hi = clip_bounds(c)
    c.emit((x,), c.out(x.layout), lambda a: jnp.clip(a, lo, hi))


def identity_op(c: NodeContext) -> None:
    c.check_attrs({"ratio", "seed", "is_test"})
    if len([o for o in c.node.outputs if o]) > 1 and c.g.consumers(c.node.outputs[1]):
        raise c.refuse("its mask output is used")
    c.alias(c.node.outputs[0], c.act(0))


def softmax(c: NodeContext) -> None:
    c.check_attrs({"axis"})
    x = c.fact(0)
    axis = int(c.attr("axis", 1 if c.g.opset < 13 else -1))
    if not -x.rank <= axis < x.rank:
        raise c.refuse(f"axis={axis} for an input of rank {x.rank}")
    axis %= x.rank

    def soft(a, ax):
        e = jnp.exp(a - jnp.max(a, axis=ax, keepdims=True))
        return e / jnp.sum(e, axis=ax, keepdims=True)
    if c.g.opset < 13 and axis != x.rank - 1:
        # Softmax-1/11 takes the dimensions from axis on as one row; onnx.reference (the oracle)
        # normalizes along axis alone: they differ, so neither is taken
        raise c.refuse(f"Softmax before opset 13 with axis={axis} of {x.rank} (not the last axis) is not supported "
                       "(the ONNX operator and onnx.reference disagree there)")
    if isinstance(x.layout, Flat):  # a row's order does not change its softmax
        c.emit((x,), c.out(x.layout), lambda a: soft(a, 1))
        return
    ax = x.layout.index(axis)
    c.emit((x,), c.out(x.layout), lambda a: soft(a, ax))


# ---------------------------------------------------------------- pools

def pool_kernel(c: NodeContext, x: Val) -> tuple[tuple[int, int], tuple, tuple]:
    spatial_rank4(c, x)
    k = ints(c, "kernel_shape", None)
    if k is None:
        raise c.refuse("no kernel_shape")
    dil = ints(c, "dilations", (1, 1))
    strides, pads = window(c, x, k, dilations=dil)
    return k, strides, pads, dil


def avg_pool(c: NodeContext) -> None:
    c.check_attrs({"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"})
    x = c.b.in_layout(c.fact(0), NHWC)
    k, strides, pads, dil = pool_kernel(c, x)
    if dil != (1, 1):
        raise c.refuse(f"dilations={list(dil)} are not supported")
    include_pad = int(c.attr("count_include_pad", 0))
    dims, st, pd = (1, *k, 1), (1, *strides, 1), ((0, 0), *pads, (0, 0))

    def run(a):
        total = lax.reduce_window(a, 0.0, lax.add, dims, st, pd)
        if include_pad:
            return total / float(k[0] * k[1])
        count = lax.reduce_window(jnp.ones_like(a), 0.0, lax.add, dims, st, pd)
        return total / count
    c.emit((x,), c.out(NHWC), run)


def max_pool(c: NodeContext) -> None:
    c.check_attrs({"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"})
    if len([o for o in c.node.outputs if o]) > 1:
        raise c.refuse("the Indices output is not supported")
    x = c.b.in_layout(c.act(0), NHWC)
    k, strides, pads, dil = pool_kernel(c, x)
    x = c.b.dequantized(x)
    dims, st, pd = (1, *k, 1), (1, *strides, 1), ((0, 0), *pads, (0, 0))
    c.emit((x,), c.out(NHWC), lambda a: lax.reduce_window(a, -jnp.inf, lax.max, dims, st, pd, window_dilation=(1, *dil, 1)))


def global_pool(c: NodeContext) -> None:
    c.check_attrs(set())
    x = c.fact(0)
    spatial_rank4(c, x)
    x = c.b.in_layout(x, NHWC)
    if c.node.op == "GlobalAveragePool":
        c.emit((x,), c.out(NHWC), lambda a: jnp.mean(a, axis=(1, 2), keepdims=True))
    else:
        c.emit((x,), c.out(NHWC), lambda a: jnp.max(a, axis=(1, 2), keepdims=True))


# ---------------------------------------------------------------- shapes

def reshaped(c: NodeContext, x: Val, target: tuple[int, ...]) -> None:
    """x (any dtype) as `target`: a 4-D value flattened to [N, rest] keeps its layout (Flat), a
    value in the file's layout is reshaped, anything else is brought to the file's layout first."""
    n = int(np.prod(x.shape))
    if int(np.prod(target)) != n:
        raise c.refuse(f"{list(x.shape)} cannot become {list(target)}")
    if (not isinstance(x.layout, Flat) and x.rank == 4 and x.layout != identity(4) and x.layout[0] == 0
            and len(target) == 2 and target[0] == x.shape[0]):
        flat = Flat(x.shape, x.layout)
        layout = identity(2) if np.array_equal(flat.columns(), np.arange(target[1])) else flat
        c.emit((x,), Val(c.node.outputs[0], target, x.dtype, layout, x.quant, x.deq),
               lambda a: a.reshape(target))
        return
    x = c.b.plain(x)
    c.emit((x,), Val(c.node.outputs[0], target, x.dtype, identity(len(target)), x.quant, x.deq),
           lambda a: a.reshape(target))


def reshape(c: NodeContext) -> None:
    c.check_attrs({"allowzero"} if c.g.opset >= 5 else {"shape", "consumed_inputs"})
    if c.g.opset >= 5:
        c.const(1, "the shape")
    reshaped(c, c.act(0), c.out_shape)


def flatten(c: NodeContext) -> None:
    c.check_attrs({"axis"})
    reshaped(c, c.act(0), c.out_shape)


def transpose(c: NodeContext) -> None:
    """Only the layout changes: JAX = out.transpose(p') where out = in.transpose(perm)."""
    c.check_attrs({"perm"})
    x = c.act(0)
    if isinstance(x.layout, Flat):
        x = c.b.plain(x)
    perm = tuple(int(p) for p in c.attr("perm", tuple(reversed(range(x.rank)))))
    if sorted(perm) != list(range(x.rank)):
        raise c.refuse(f"perm={list(perm)} is not a permutation of {x.rank} axes")
    inv = inverse(perm)
    layout = tuple(inv[p] for p in x.layout)
    c.alias(c.node.outputs[0], Val(x.key, c.out_shape, x.dtype, layout, x.quant, x.deq))


OPS = {"Conv": conv, "ConvTranspose": conv_transpose, "BatchNormalization": batchnorm, "Gemm": gemm, "MatMul": matmul, "Add": add, "Relu": relu,
       "Clip": clip, "Softmax": softmax, "AveragePool": avg_pool, "MaxPool": max_pool,
       "GlobalAveragePool": global_pool, "GlobalMaxPool": global_pool, "Reshape": reshape, "Flatten": flatten,
       "Transpose": transpose, "Identity": identity_op, "Dropout": identity_op, **ACTIVATIONS}
