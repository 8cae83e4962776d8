"""What the ONNX op builders share: the values of the graph as JAX arrays in a layout, the
builder that turns nodes into layers, and the context one node is built in.

Layouts. ONNX is NCHW; the JAX function works in NHWC, as the .tflite reader and the int8
blocks do. Every value carries its layout: a permutation p with JAX array = ONNX value
.transpose(p) (the identity for the file's own layout, (0, 2, 3, 1) for NHWC), or `Flat`: a
[N, C*H*W] value flattened from an NHWC one, whose columns are the ONNX features in NHWC order.
A node asks for its inputs in the layout it computes in and the builder inserts a transpose
layer only where a value's layout differs (once per value and layout): convolutions and pools
take NHWC, so a graph input feeding a Conv is transposed once at the boundary, a chain of
convolutions never; a Transpose node only changes the layout it records; a Flatten of an NHWC
value is free, and the Gemm/MatMul reading it permutes its constant weight's rows instead.
Graph outputs are brought back to the file's layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax.numpy as jnp
import numpy as np

from specializer.importers.graph_model import Layer
from specializer.importers.onnx_file import NodeRecord, OnnxGraph, refuse_node
from specializer.quant.ptq import QParams

Perm = tuple[int, ...]
NHWC: Perm = (0, 2, 3, 1)
Pair = tuple[int, int]


def identity(rank: int) -> Perm:
    return tuple(range(rank))


def inverse(p: Perm) -> Perm:
    return tuple(int(i) for i in np.argsort(p))


@dataclass(frozen=True)
class Flat:
    """A 2-D value [N, F] held as the reshape of a 4-D value's JAX array: `src` the 4-D value's
    ONNX shape, `perm` its layout (perm[0] == 0: the batch stays first)."""
    src: tuple[int, ...]
    perm: Perm

    def columns(self) -> np.ndarray:
        """JAX column j holds ONNX feature columns()[j]."""
        rest = self.src[1:]
        return np.arange(int(np.prod(rest))).reshape(rest).transpose([p - 1 for p in self.perm[1:]]).reshape(-1)


Layout = Perm | Flat


@dataclass(frozen=True)
class Val:
    """A computed ONNX value: the JAX array under `key`, in `layout`. An int8 array (dtype int8)
    with `quant` stands for the int8 ONNX value (deq False: a QuantizeLinear's output) or for
    the float ONNX value scale * (q - zero_point) (deq True: a DequantizeLinear's output)."""
    key: str
    shape: tuple[int, ...]
    dtype: str
    layout: Layout
    quant: QParams | None = None
    deq: bool = False

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class DeqConst:
    """A DequantizeLinear of a constant (a weight or bias): the integers, one scale per slice
    along `axis` (a single scale: per tensor), the zero points."""
    q: np.ndarray
    scales: np.ndarray      # float32
    zero_points: np.ndarray
    axis: int

    def real(self) -> np.ndarray:
        """ONNX's DequantizeLinear of it, computed as onnx.reference computes it (float32)."""
        shape = [1] * self.q.ndim
        if self.scales.size > 1:
            shape[self.axis] = -1
        zp = self.zero_points.astype(np.float32).reshape(shape)
        return ((self.q.astype(np.float32) - zp) * self.scales.reshape(shape)).astype(np.float32)


def to_layout(a, src: Layout, dst: Layout, shape: tuple[int, ...]):
    """The JAX array `a` of the ONNX value of `shape`, from layout `src` to `dst`."""
    if isinstance(src, Flat):
        jshape = tuple(src.src[i] for i in src.perm)
        a = jnp.transpose(a.reshape(jshape), inverse(src.perm)).reshape(shape)
        src = identity(len(shape))
    if isinstance(dst, Flat):
        raise ValueError("no value is converted into a Flat layout")
    axes = tuple(inverse(src)[q] for q in dst)
    return a if axes == identity(len(axes)) else jnp.transpose(a, axes)


class Builder:
    """The layers, weights and values of a graph being read; `done` holds the nodes a fused
    pattern consumed (BatchNormalization folded into a Conv, a QDQ pair around an int8 op)."""

    def __init__(self, g: OnnxGraph):
        self.g = g
        self.vals: dict[str, Val] = {}
        self.deq_consts: dict[str, DeqConst] = {}
        self.folded: dict[str, np.ndarray] = {}  # outputs of nodes computed at read time from constants
        self.layers: list[Layer] = []
        self.weights: dict[str, np.ndarray] = {}
        self.done: set[int] = set()
        self._converted: dict[tuple[str, object], Val] = {}
        # key -> (the ONNX value its array holds, layout, quantization, dtype of the array)
        self.sources: dict[str, tuple[str, Layout, QParams | None, str]] = {}

    def layer(self, name: str, inputs: tuple[Val, ...], out: Val, run: Callable, weights: tuple[str, ...] = (),
              block=None, source: str | None = None) -> Val:
        self.sources.setdefault(out.key, (source or out.key, out.layout, out.quant, out.dtype))
        self.layers.append(Layer(len(self.layers), name, tuple(v.key for v in inputs), out.key, weights, block, run))
        return out

    def weight(self, name: str, array: np.ndarray) -> str:
        if name in self.weights:
            raise ValueError(f"weight {name} twice")
        self.weights[name] = np.ascontiguousarray(array)
        return name

    def in_layout(self, v: Val, layout: Layout) -> Val:
        """v in `layout` (a transpose layer, once per value and layout)."""
        if v.layout == layout:
            return v
        key = (v.key, v.layout, layout)
        if key not in self._converted:
            src = v.layout
            out = Val(self._key(f"{v.key}@{_layout_name(layout)}"), v.shape, v.dtype, layout, v.quant, v.deq)
            self._converted[key] = self.layer(f"layout {_layout_name(src)} -> {_layout_name(layout)}", (v,), out,
                                              lambda a: to_layout(a, src, layout, v.shape),
                                              source=self.sources.get(v.key, (v.key,))[0])
        return self._converted[key]

    def _key(self, want: str) -> str:
        taken = {layer.output for layer in self.layers} | {v.key for v in self.vals.values()}
        key, k = want, 1
        while key in taken:
            key, k = f"{want}.{k}", k + 1
        return key

    def plain(self, v: Val) -> Val:
        return self.in_layout(v, identity(v.rank))

    def dequantized(self, v: Val) -> Val:
        """The float32 ONNX value of v (a DequantizeLinear's output, computed as onnx.reference
        computes it: (q - zero_point) * scale in float32)."""
        if not v.deq:
            return v
        key = (v.key, v.layout, "float")
        if key not in self._converted:
            s, z = np.float32(v.quant.scale), np.float32(v.quant.zero_point)
            out = Val(self._key(f"{v.key}@float"), v.shape, "float32", v.layout)
            self._converted[key] = self.layer("DequantizeLinear", (v,), out,
                                              lambda a: (a.astype(jnp.float32) - z) * s,
                                              source=self.sources.get(v.key, (v.key,))[0])
        return self._converted[key]


def _layout_name(layout: Layout) -> str:
    if isinstance(layout, Flat):
        return "flat"
    return "nhwc" if layout == NHWC else "".join(map(str, layout))


@dataclass
class NodeContext:
    b: Builder
    node: NodeRecord

    @property
    def g(self) -> OnnxGraph:
        return self.b.g

    def refuse(self, what: str):
        return refuse_node(self.g.path, self.node, what)

    def attr(self, name: str, default=None):
        return self.node.attrs.get(name, default)

    def check_attrs(self, allowed) -> None:
        extra = [a for a in self.node.attrs if a not in allowed]
        if extra:
            raise self.refuse(f"attribute {extra[0]} is not supported")

    def name(self, k: int) -> str:
        return self.node.inputs[k] if k < len(self.node.inputs) else ""

    def present(self, k: int) -> bool:
        return self.name(k) != ""

    def is_const(self, k: int) -> bool:
        n = self.name(k)
        return (n in self.b.deq_consts or n in self.b.folded
                or (n in self.g.values and self.g.values[n].data is not None))

    def act(self, k: int) -> Val:
        """Input k, a computed value."""
        n = self.name(k)
        if n in self.b.vals:
            return self.b.vals[n]
        if self.is_const(k):
            raise self.refuse(f"input {k} ('{n}') is a constant; the reader takes it computed")
        raise self.refuse(f"input {k} ('{n}') is computed by no node the reader took")

    def fact(self, k: int) -> Val:
        """Input k as a float32 value (dequantized if it is a DequantizeLinear's output)."""
        v = self.b.dequantized(self.act(k))
        if v.dtype != "float32":
            raise self.refuse(f"input {k} ('{self.name(k)}') is {v.dtype}; the reader takes float32 here")
        return v

    def const(self, k: int, what: str = "") -> np.ndarray:
        """Input k, a constant, as the float ONNX value (a DequantizeLinear's output dequantized)."""
        n = self.name(k)
        if n in self.b.deq_consts:
            return self.b.deq_consts[n].real()
        if n in self.b.folded:
            return self.b.folded[n]
        r = self.g.values.get(n)
        if r is None or r.data is None:
            raise self.refuse(f"input {k} ('{n}'{f', {what}' if what else ''}) is computed; the reader takes "
                              "it only as a constant")
        return r.data

    def float_const(self, k: int, what: str = "") -> np.ndarray:
        a = self.const(k, what)
        if a.dtype != np.float32:
            raise self.refuse(f"input {k} ('{self.name(k)}') is {a.dtype}; expected float32")
        return a

    def out_record(self, j: int = 0):
        n = self.node.outputs[j]
        r = self.g.values.get(n)
        if r is None or r.shape is None:
            raise self.refuse(f"output '{n}' has no static shape after shape inference")
        return r

    @property
    def out_shape(self) -> tuple[int, ...]:
        return self.out_record().shape

    def out(self, layout: Layout, dtype: str = "float32", quant: QParams | None = None, deq: bool = False,
            j: int = 0) -> Val:
        return Val(self.node.outputs[j], self.out_shape, dtype, layout, quant, deq)

    def emit(self, inputs: tuple[Val, ...], out: Val, run: Callable, weights: tuple[str, ...] = (),
             block=None, name: str | None = None) -> Val:
        v = self.b.layer(name or self.label, inputs, out, run, weights, block)
        self.b.vals[out.key] = v
        return v

    def alias(self, name: str, v: Val) -> None:
        """The ONNX value `name` is v's array (no layer)."""
        self.b.vals[name] = v

    @property
    def label(self) -> str:
        n = self.node
        return f"{n.op}{f' {n.name!r}' if n.name else ''} (node {n.index})"

    def wname(self, prefix: str) -> str:
        return f"{prefix}{self.node.index}"

    def run_reference(self, op: str, inputs: list[str], outputs: list[str], feeds: dict, attrs: dict,
                      failed: str) -> list[np.ndarray]:
        """onnx.reference running one node `op` on `feeds` (name -> array; "" in `inputs`: an
        absent input) with `attrs` as the node record holds them; an error is this node's refusal,
        `failed` saying what could not be computed."""
        from onnx import helper, numpy_helper
        from onnx.reference import ReferenceEvaluator

        def attr(v):
            return list(v) if isinstance(v, tuple) else numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v

        one = helper.make_node(op, inputs, outputs, **{k: attr(v) for k, v in attrs.items()})
        graph = helper.make_graph([one], "one", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(
            v.dtype), v.shape) for n, v in feeds.items()], [helper.make_empty_tensor_value_info(o) for o in outputs])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.g.opset)])
        try:
            return [np.asarray(v) for v in ReferenceEvaluator(model).run(None, feeds)]
        except Exception as e:
            raise self.refuse(f"{failed} failed ({type(e).__name__}: {e})") from None

    def sole_consumer(self, value: str) -> NodeRecord | None:
        """The one node reading `value`, if only one does and it is no graph output."""
        users = self.g.consumers(value)
        if len(users) != 1 or value in self.g.outputs or users[0].index in self.b.done:
            return None
        return users[0]


def spatial_rank4(c: NodeContext, v: Val, what: str = "input") -> None:
    if v.rank != 4:
        raise c.refuse(f"{what} of rank {v.rank} {list(v.shape)}: the reader takes 2-D spatial (N, C, H, W) "
                       "tensors only")


def ints(c: NodeContext, name: str, default, n: int = 2) -> tuple[int, ...]:
    v = c.attr(name)
    if v is None:
        return tuple(default)
    v = tuple(int(x) for x in v)
    if len(v) != n:
        raise c.refuse(f"{name}={list(v)} has {len(v)} values; expected {n}")
    return v


def window(c: NodeContext, x: Val, kernel: Pair, *, dilations: Pair = (1, 1), ceil_ok: bool = False
           ) -> tuple[Pair, tuple[Pair, Pair]]:
    """(strides, ((top, bottom), (left, right))) of a Conv or pool from its attributes; the output
    size must be what they give (ceil_mode is refused where it changes it)."""
    strides = ints(c, "strides", (1, 1))
    if min(strides) < 1 or min(dilations) < 1:
        raise c.refuse(f"strides {list(strides)} / dilations {list(dilations)} must be >= 1")
    auto = c.attr("auto_pad", "NOTSET")
    hw = x.shape[2:4]
    if auto == "NOTSET":
        p = ints(c, "pads", (0, 0, 0, 0), 4)
        if min(p) < 0:
            raise c.refuse(f"negative pads {list(p)} are not supported")
        pads = ((p[0], p[2]), (p[1], p[3]))
    elif auto == "VALID":
        pads = ((0, 0), (0, 0))
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for size, k, s, d in zip(hw, kernel, strides, dilations):
            total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
            head = (total + 1) // 2 if auto == "SAME_LOWER" else total // 2
            pads.append((head, total - head))
        pads = tuple(pads)
    else:
        raise c.refuse(f"auto_pad={auto} is not supported")
    ceil = int(c.attr("ceil_mode", 0))
    want = []
    for size, k, s, d, (lo, hi) in zip(hw, kernel, strides, dilations, pads):
        span = size + lo + hi - ((k - 1) * d + 1)
        if span < 0:
            raise c.refuse(f"the window {list(kernel)} is larger than the padded input {list(hw)}")
        want.append(span // s + 1 if not ceil else -(-span // s) + 1)
    floor = [(size + lo + hi - ((k - 1) * d + 1)) // s + 1
             for size, k, s, d, (lo, hi) in zip(hw, kernel, strides, dilations, pads)]
    if ceil and want != floor:
        raise c.refuse("ceil_mode=1 where it adds an output row or column is not supported")
    out = c.out_shape
    if len(out) != 4 or tuple(out[2:]) != tuple(want):
        raise c.refuse(f"output shape {list(out)} does not match the window (expected spatial {want})")
    return strides, pads
