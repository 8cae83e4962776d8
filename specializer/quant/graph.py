"""A float JAX model as a list of layers the int8 blocks implement.

The function is traced with jax.make_jaxpr; calls (jit, custom_jvp/vjp, closed_call) are
inlined; everything computed from weights and literals alone is folded to a constant; what
is left on activations is matched, in program order, against the layer patterns below.
Anything else is refused with one error naming the primitive and its source line.

Supported (NHWC activations, float32):
  conv         lax.conv_general_dilated, NHWC/HWIO/NHWC, no dilation, groups 1
  depthwise    the same with feature_group_count == input channels (any channel multiplier)
  tconv        lax.conv_transpose (an input-dilated conv_general_dilated, stride-1 window,
               groups 1), NHWC/HWIO/NHWC: TFLite's TRANSPOSE_CONV
  dense        x @ W / jnp.dot / dot_general of a 2-D activation and a 2-D constant
  + bias       a constant added right after a conv/depthwise/dense, constant over all but the
               last (channel) axis
  relu         max(x, 0) (jnp.maximum, jax.nn.relu) right after conv/depthwise/dense/add/sub/mul/pool:
               folded into the block's activation clamp, as TFLite fuses it
  max pool     lax.reduce_window with lax.max (reduce_window_max), any window/stride/padding
  avg pool     reduce_window_sum divided by the window size, without padding; and jnp.mean
               over the spatial axes (1, 2) of an NHWC tensor (global average pool)
  mean         jnp.mean over any other axes (keepdims or not): TFLite's MEAN
  pad          jnp.pad / lax.pad with zeros (no interior padding): TFLite's PAD
  transpose    jnp.transpose / lax.transpose: TFLite's TRANSPOSE
  concat       jnp.concatenate / lax.concatenate of activations along any axis: TFLite's
               CONCATENATION (an input quantized otherwise than the output requantized first,
               as the converter's QUANTIZE op does)
  add          two activations of one shape
  sub          the difference of two activations of one shape: TFLite's SUB
  mul          the product of two activations, one of them broadcast to the other's shape or
               not: TFLite's MUL
  const        a constant operand of add (other than a bias), sub or mul (1 - z, x * scale):
               a layer of its own, the constant broadcast to the op's output shape and
               quantized like an activation from its own range, as TFLite stores one
  softmax      jax.nn.softmax over the last axis
  logistic     jax.nn.sigmoid (TFLite's LOGISTIC: output 1/256, -128); tanh: jnp.tanh (1/128, 0)
  leaky relu   jax.nn.leaky_relu (where(x >= 0, x, alpha * x)): TFLite's LEAKY_RELU
  hard swish   jax.nn.hard_swish (x * relu6(x + 3) / 6): TFLite's HARD_SWISH
  reshape      reshape / squeeze / expand_dims (row-major: the int8 data is unchanged)
  lstm         lax.scan over the time axis of an LSTM cell with constant weights, starting from
               zero states (lstm_scan.py says which spellings): TFLite's
               UNIDIRECTIONAL_SEQUENCE_LSTM; its per-step outputs, not its final carries
  scan         any other lax.scan: the builder raises ScanToUnroll, and quantize() unrolls it
               into its steps (scan_unroll.py) and builds again
  movement     an op that only picks and repeats an activation's values, its other operands
               constant: gather (jax.image.resize 'nearest', x[..., idx]), broadcast_in_dim
               (jnp.repeat, jnp.broadcast_to), slice (x[:, 1::2]), rev (jnp.flip), split
               (jnp.split: a slice per part): TFLite's RESIZE_NEAREST_NEIGHBOR, GATHER, TILE,
               STRIDED_SLICE, REVERSE_V2, SPLIT keep the input's quantization, and so does the
               same op on the int8 values
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from jax import lax
from jax.extend import core
from jax.lax import GatherScatterMode
from jax._src import source_info_util

from specializer.errors import UserError
from specializer.quant import patterns
from specializer.quant.patterns import Eqn, is_const as _is_const, value as _val

CALLS = ("pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
         "custom_vjp_call_jaxpr", "remat", "checkpoint")
_SHAPE_ONLY = ("reshape", "squeeze", "expand_dims")
NHWC_HWIO = ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))


class QuantizeError(UserError):
    """A float model quantize() cannot turn into int8 blocks (one line, names the op)."""


@dataclass
class Layer:
    """One int8 block to be: kind in input, conv, depthwise, tconv, dense, maxpool, avgpool, gap
    (global average pool), add, sub, mul, softmax, reshape, ... (RULES and the groups below); `out`
    is the float var holding its result."""
    kind: str
    ins: list
    out: object
    attrs: dict = field(default_factory=dict)
    relu: bool = False
    where: str = ""


@dataclass
class Graph:
    invars: list                  # function inputs (activations), in signature order
    layers: list[Layer]
    outvars: list
    consts: dict                  # Var -> np.ndarray of everything folded
    origin: dict                  # Var -> parameter name, for constants that are a parameter
    eqns: list[Eqn]               # the flat program (for calibration)


def evaluate(g: Graph, inputs) -> dict:
    """Run the flat float program on `inputs` (one array per invar): every value by its Var,
    constants folded at build time read from g.consts."""
    env = dict(zip(g.invars, inputs))
    for e in g.eqns:
        if all(o in g.consts for o in e.outs):
            continue  # folded at build time
        outs = e.primitive.bind(*[read(g, env, a) for a in e.ins], **e.params)
        env.update(zip(e.outs, outs if e.primitive.multiple_results else [outs]))
    return env


def read(g: Graph, env: dict, atom):
    """An atom's value: a literal's, a computed value, or a folded constant."""
    if isinstance(atom, core.Literal):
        return atom.val
    return env[atom] if atom in env else g.consts[atom]


def _where(eqn) -> str:
    try:
        return source_info_util.summarize(eqn.source_info)
    except Exception:  # source info is best effort
        return "?"


def sub_jaxpr(eqn):
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        j = eqn.params.get(key)
        if j is not None:
            return j
    return None


def flatten(closed: core.ClosedJaxpr, consts: dict) -> tuple[list[Eqn], dict]:
    """Inline every call; returns flat equations and an alias map (inner var -> outer atom)."""
    alias: dict = {}
    eqns: list[Eqn] = []

    def res(a):
        while not isinstance(a, core.Literal) and a in alias:
            a = alias[a]
        return a

    def walk(jaxpr: core.Jaxpr, jconsts, args):
        for v, c in zip(jaxpr.constvars, jconsts):
            consts[v] = np.asarray(c)
        for v, a in zip(jaxpr.invars, args):
            if v is not a:
                alias[v] = a
        for e in jaxpr.eqns:
            sub = sub_jaxpr(e) if e.primitive.name in CALLS else None
            if sub is not None:
                inner = sub.jaxpr if isinstance(sub, core.ClosedJaxpr) else sub
                inner_consts = sub.consts if isinstance(sub, core.ClosedJaxpr) else ()
                n = len(inner.invars)
                walk(inner, inner_consts, [res(a) for a in e.invars[:n]])
                for o, io in zip(e.outvars, inner.outvars):
                    alias[o] = res(io)
                continue
            eqns.append(Eqn(e.primitive.name, [res(a) for a in e.invars], list(e.outvars),
                            dict(e.params), _where(e), e.primitive))

    walk(closed.jaxpr, closed.consts, list(closed.jaxpr.invars))
    return eqns, alias


class _ConstOut:
    """A const layer's `out`: its own (a literal is no key, and one constant may feed several
    ops), with the shape the layers after it read."""

    def __init__(self, aval):
        self.aval = aval


class ScanToUnroll(Exception):
    """A scan that is not an LSTM (`why`): quantize() unrolls the scans of its `body` (scan_unroll.py)
    and builds again; `inside`: the source lines of the body's operations, for the messages."""

    def __init__(self, body, why: str, where: str):
        super().__init__(why)
        self.body, self.why, self.where = body, why, where
        self.inside = frozenset(e.where for e in flatten(body, {})[0])


def _desc(a) -> str:
    return f"{a.aval.dtype}[{','.join(map(str, a.aval.shape))}]"


def build(closed: core.ClosedJaxpr, act_invars: list, param_values: dict, param_names: dict) -> Graph:
    """param_values: invar -> np.ndarray; param_names: invar -> name."""
    return _Builder(closed, act_invars, param_values, param_names).graph()


_UNSUPPORTED = ("no int8 block for it (supported: conv, depthwise conv, transposed conv, dense, bias add, relu, "
                "max/avg pool, mean, add, softmax, sigmoid, tanh, leaky relu, hard swish, pad, transpose, concatenate, "
                "reshape, resize nearest, gather, slice, split, broadcast, flip, lax.scan)")


class _Builder:
    """The jaxpr's equations, in order, become layers: one rule per primitive (RULES), constants
    folded as they come, a bias add, relu or mean folded into the layer it follows."""

    def __init__(self, closed: core.ClosedJaxpr, act_invars: list, param_values: dict, param_names: dict):
        self.consts = dict(param_values)
        self.origin = dict(param_names)
        self.eqns, alias = flatten(closed, self.consts)
        self.act_invars = list(act_invars)
        self.outvars = [a if isinstance(a, core.Literal) else _res(alias, a) for a in closed.jaxpr.outvars]
        self.uses: dict = {}
        for e in self.eqns:
            for a in e.ins:
                if not isinstance(a, core.Literal):
                    self.uses[a] = self.uses.get(a, 0) + 1
        for a in self.outvars:
            if not isinstance(a, core.Literal):
                self.uses[a] = self.uses.get(a, 0) + 2  # an output is never folded away
        self.layers: list[Layer] = [Layer("input", [], v) for v in act_invars]
        self.by_var: dict = {v: layer for v, layer in zip(act_invars, self.layers)}

    # ---- helpers the rules share

    def refuse(self, e: Eqn, why: str):
        ins = ", ".join(_desc(a) for a in e.ins)
        err = QuantizeError(f"quantize: unsupported op '{e.prim}' ({ins}) at {e.where}: {why}")
        err.where = e.where  # which source line, for a note on the scan it came from (ptq._graph)
        raise err

    def producer(self, a, e: Eqn) -> Layer:
        if isinstance(a, core.Literal) or a not in self.by_var:
            self.refuse(e, "operand is neither an activation nor a constant")
        return self.by_var[a]

    def emit(self, kind: str, ins: list, out, e: Eqn, **attrs) -> Layer:
        layer = Layer(kind, ins, out, attrs, where=e.where)
        self.layers.append(layer)
        self.by_var[out] = layer
        return layer

    def constant(self, a, out, e: Eqn) -> Layer:
        """A constant operand of an elementwise op as a layer of its own: its float value broadcast
        to the op's output shape, quantized like an activation from its own range (ptq.py)."""
        value = np.broadcast_to(np.asarray(self.val(a), np.float32), out.aval.shape)
        var = None if isinstance(a, core.Literal) else a  # a weight's: the int8 tensor keeps its name
        layer = Layer("const", [], _ConstOut(out.aval), dict(value=np.ascontiguousarray(value), var=var),
                      where=e.where)
        self.layers.append(layer)
        return layer

    def fold(self, layer: Layer, old, new) -> None:
        del self.by_var[old]
        layer.out = new
        self.by_var[new] = layer

    def is_const(self, a) -> bool:
        return _is_const(a, self.consts)

    def val(self, a):
        return _val(a, self.consts)

    def const_first(self, e: Eqn) -> tuple:
        """A binary op's operands with the constant, if any, second."""
        a, b = e.ins
        return (b, a) if self.is_const(a) else (a, b)

    # ---- the walk

    def graph(self) -> Graph:
        folded = set()
        for idx, e in enumerate(self.eqns):  # first: what weights and literals alone compute
            if all(self.is_const(a) for a in e.ins):
                self.fold_constant(e)
                folded.add(idx)
        skip = {}  # then the multi-equation patterns, which read those constants (an alpha, a 6)
        for groups in patterns.GROUPS:
            skip.update(groups(self.eqns, self.consts, self.outvars))
        for idx, e in enumerate(self.eqns):
            if idx in skip:
                if skip[idx] is not None:
                    kind, x, out, attrs = skip[idx]
                    self.emit(kind, [self.producer(x, e)], out, e, **attrs)
                continue
            if idx in folded:
                continue
            rule = RULES.get(e.prim)
            if rule is None:
                self.refuse(e, _UNSUPPORTED)
            rule(self, e, e.outs[0])
        for layer in self.layers:
            if layer.kind in ("windowsum", "spatialsum"):
                raise QuantizeError(f"quantize: a window/spatial sum at {layer.where} is not divided by its "
                                    "size (only averages are supported)")
        for v in self.outvars:
            if isinstance(v, core.Literal) or v not in self.by_var:
                raise QuantizeError("quantize: every output must be computed from the inputs")
        return Graph(self.act_invars, self.layers, self.outvars, self.consts, self.origin, self.eqns)

    def fold_constant(self, e: Eqn) -> None:
        """An equation of constants only: computed now; a reshape or cast of a named weight keeps its name."""
        outs = e.primitive.bind(*[self.val(a) for a in e.ins], **e.params)
        outs = outs if e.primitive.multiple_results else [outs]
        for o, v in zip(e.outs, outs):
            self.consts[o] = np.asarray(v)
            if len(e.ins) == 1 and e.prim in _SHAPE_ONLY + ("broadcast_in_dim", "convert_element_type") \
                    and not isinstance(e.ins[0], core.Literal) and e.ins[0] in self.origin:
                self.origin[o] = self.origin[e.ins[0]]

    # ---- one rule per primitive

    def conv(self, e: Eqn, out) -> None:
        x, w = e.ins
        if not self.is_const(w):
            self.refuse(e, "the filter must be a constant (a weight)")
        p = e.params
        if tuple(map(tuple, p["dimension_numbers"])) != NHWC_HWIO:
            self.refuse(e, "dimension numbers must be NHWC / HWIO / NHWC")
        if set(p["rhs_dilation"]) != {1} or p["batch_group_count"] != 1:
            self.refuse(e, "dilated or batch-grouped convolutions are not supported")
        cin = x.aval.shape[3]
        groups = p["feature_group_count"]
        wv = self.val(w)
        attrs = dict(w=wv, w_var=w, stride=tuple(p["window_strides"]), padding=tuple(tuple(q) for q in p["padding"]))
        if set(p["lhs_dilation"]) != {1}:
            # lax.conv_transpose: the input dilated by the strides, a stride-1 window; TFLite's
            # TRANSPOSE_CONV is that with the filter reversed and k - 1 - low padding
            if set(p["window_strides"]) != {1} or groups != 1:
                self.refuse(e, "an input-dilated convolution with window strides or groups is not supported")
            pads = tuple(wv.shape[i] - 1 - p["padding"][i][0] for i in range(2))
            if min(pads) < 0:
                self.refuse(e, f"padding {attrs['padding']} starts the output before the first input pixel "
                               "(a TRANSPOSE_CONV's padding would be negative)")
            self.emit("tconv", [self.producer(x, e)], out, e, w=wv, w_var=w, stride=tuple(p["lhs_dilation"]),
                      padding=pads)
            return
        if groups == 1:
            self.emit("conv", [self.producer(x, e)], out, e, **attrs)
        elif groups == cin and wv.shape[2] == 1:
            self.emit("depthwise", [self.producer(x, e)], out, e, ch_mult=wv.shape[3] // cin, **attrs)
        else:
            self.refuse(e, f"feature_group_count {groups} is neither 1 nor the input channels {cin}")

    def dense(self, e: Eqn, out) -> None:
        x, w = e.ins
        (lc, rc), (lb, rb) = e.params["dimension_numbers"]
        if not self.is_const(w) or len(x.aval.shape) != 2 or len(w.aval.shape) != 2 \
                or tuple(lc) != (1,) or tuple(rc) != (0,) or lb or rb:
            self.refuse(e, "only activation[batch, in] @ constant[in, out] is a dense layer")
        self.emit("dense", [self.producer(x, e)], out, e, w=self.val(w), w_var=w)

    def add(self, e: Eqn, out) -> None:
        a, b = self.const_first(e)
        if not self.is_const(b):
            if a.aval.shape != b.aval.shape:
                self.refuse(e, "the two activations must have one shape (no broadcasting)")
            self.emit("add", [self.producer(a, e), self.producer(b, e)], out, e)
            return
        layer = self.producer(a, e)
        bv = np.broadcast_to(self.val(b), out.aval.shape)
        per_channel = bv.reshape(-1, bv.shape[-1])
        if layer.kind not in ("conv", "depthwise", "tconv", "dense") or "bias" in layer.attrs or layer.relu \
                or self.uses.get(a, 0) != 1 or not (per_channel == per_channel[:1]).all():
            # any other constant is an int8 tensor of the sum's shape (TFLite's ADD of a constant)
            self.emit("add", [layer, self.constant(b, out, e)], out, e)
            return
        layer.attrs["bias"] = per_channel[0].astype(np.float32)
        layer.attrs["b_var"] = b
        self.fold(layer, a, out)

    def sub(self, e: Eqn, out) -> None:
        """The difference of two activations of one shape, or of one and a constant (TFLite's SUB)."""
        a, b = e.ins
        ins = [self.constant(v, out, e) if self.is_const(v) else self.producer(v, e) for v in (a, b)]
        if any(v.aval.shape != out.aval.shape for v in (a, b) if not self.is_const(v)):
            self.refuse(e, "the two activations must have one shape (no broadcasting)")
        self.emit("sub", ins, out, e)

    def mul(self, e: Eqn, out) -> None:
        """The product of two activations (TFLite's MUL; a gate times a value), one of the
        output's shape, the other of it or broadcasting to it (a squeeze-and-excite gate); or of
        one and a constant."""
        a, b = self.const_first(e)
        if self.is_const(b):  # an int8 tensor of the product's shape (TFLite's MUL of a constant)
            self.emit("mul", [self.producer(a, e), self.constant(b, out, e)], out, e)
            return
        if a.aval.shape != out.aval.shape:
            a, b = b, a  # the product is the same: the full one first
        if a.aval.shape != out.aval.shape:
            self.refuse(e, "one of the two activations must have the product's shape (the other may broadcast)")
        self.emit("mul", [self.producer(a, e), self.producer(b, e)], out, e)

    def relu(self, e: Eqn, out) -> None:
        a, b = self.const_first(e)
        if not self.is_const(b) or np.any(self.val(b) != 0):
            self.refuse(e, "only max(x, 0) (relu) is supported")
        layer = self.producer(a, e)
        if layer.kind not in ("conv", "depthwise", "tconv", "dense", "add", "sub", "mul", "maxpool", "avgpool") \
                or layer.relu or self.uses.get(a, 0) != 1:
            self.refuse(e, "relu must directly follow a conv/depthwise/dense/add/sub/mul/pool whose result nothing "
                           "else reads")
        layer.relu = True
        self.fold(layer, a, out)

    def maxpool(self, e: Eqn, out) -> None:
        _pool(e, self.refuse, self.emit, self.producer, "maxpool")

    def windowsum(self, e: Eqn, out) -> None:
        _pool(e, self.refuse, self.emit, self.producer, "windowsum")

    def spatialsum(self, e: Eqn, out) -> None:
        """A sum over axes: with its division by their size a global average pool (axes 1, 2 of
        NHWC) or a mean."""
        x = e.ins[0]
        self.emit("spatialsum", [self.producer(x, e)], out, e, axes=tuple(int(a) for a in e.params["axes"]),
                  keep=False)

    def broadcast(self, e: Eqn, out) -> None:
        """jnp.mean's keepdims: the sum's result given back its reduced axes as size 1; any
        other broadcast of an activation repeats its values (a movement)."""
        x = e.ins[0]
        layer = self.producer(x, e)
        if layer.kind != "spatialsum" or layer.attrs["keep"] or self.uses.get(x, 0) != 1 \
                or int(np.prod(out.aval.shape)) != int(np.prod(x.aval.shape)):
            return self.movement(e, out)
        layer.attrs["keep"] = True
        self.fold(layer, x, out)

    def movement(self, e: Eqn, out) -> None:
        """An op that only picks and repeats its first operand's values; the others constant."""
        if self.is_const(e.ins[0]) or not all(self.is_const(a) for a in e.ins[1:]):
            self.refuse(e, "only its first operand may be an activation (the indices must be constants)")
        params = dict(e.params)
        operands = tuple(np.asarray(self.val(a)) for a in e.ins[1:])
        if e.prim == "gather" and str(params.get("mode")) == str(GatherScatterMode.FILL_OR_DROP):
            # jnp.take's default fills out-of-bounds indices (with NaN): a movement only when
            # every index is in bounds, which a probe of the operand's own positions shows (a
            # clipping gather, mode='clip', picks values wherever its indices point)
            x = e.ins[0]
            probe = np.arange(int(np.prod(x.aval.shape)), dtype=np.float32).reshape(x.aval.shape)
            picked = np.asarray(e.primitive.bind(probe, *operands, **{**params, "mode": GatherScatterMode.FILL_OR_DROP,
                                                                       "fill_value": -1.0}))
            if (picked < 0).any():
                self.refuse(e, "an index is out of bounds (the gather fills a constant there: no movement)")
            params.update(mode=GatherScatterMode.PROMISE_IN_BOUNDS, fill_value=None)
        self.emit("move", [self.producer(e.ins[0], e)], out, e, primitive=e.primitive, params=params,
                  operands=operands)

    def split(self, e: Eqn, out) -> None:
        """jnp.split of an activation: each part a slice of it (a movement, as TFLite's SPLIT keeps
        the input's quantization)."""
        x = e.ins[0]
        layer, axis, start = self.producer(x, e), e.params["axis"], 0
        for o, size in zip(e.outs, e.params["sizes"]):
            lo, hi = [0] * x.aval.ndim, list(x.aval.shape)
            lo[axis], hi[axis] = start, start + size
            self.emit("move", [layer], o, e, primitive=lax.slice_p,
                      params=dict(start_indices=tuple(lo), limit_indices=tuple(hi), strides=None), operands=())
            start += size

    def scan(self, e: Eqn, out) -> None:
        from specializer.quant import lstm_scan

        m = lstm_scan.match(e, self.consts, flatten)
        if isinstance(m, str):
            raise ScanToUnroll(e.params["jaxpr"], m, e.where)
        if any(self.uses.get(v) for v in e.outs[:2]):
            self.refuse(e, "the LSTM's final states are read: read its per-step outputs instead (the last "
                        "hidden state is hs[-1]); TFLite's LSTM gives only those")
        self.emit("lstm", [self.producer(e.ins[-1], e)], e.outs[2], e, lstm=m)

    def pad(self, e: Eqn, out) -> None:
        x, v = e.ins
        if not self.is_const(v) or np.any(self.val(v) != 0):
            self.refuse(e, "only padding with zeros is supported (TFLite's PAD pads with the zero point)")
        cfg = [tuple(int(q) for q in c) for c in e.params["padding_config"]]
        if any(lo < 0 or hi < 0 or interior for lo, hi, interior in cfg):
            self.refuse(e, f"padding {cfg} is negative or interior")
        self.emit("pad", [self.producer(x, e)], out, e, widths=tuple((lo, hi) for lo, hi, _ in cfg))

    def transpose(self, e: Eqn, out) -> None:
        self.emit("transpose", [self.producer(e.ins[0], e)], out, e,
                  perm=tuple(int(p) for p in e.params["permutation"]))

    def concatenate(self, e: Eqn, out) -> None:
        if any(self.is_const(a) for a in e.ins):
            self.refuse(e, "every operand must be an activation (a constant joined to one has no int8 block)")
        self.emit("concat", [self.producer(a, e) for a in e.ins], out, e, axis=int(e.params["dimension"]))

    def mean(self, e: Eqn, out) -> None:
        """A window or spatial sum divided by its size: the average pool or the global average pool."""
        a, b = e.ins
        layer = self.producer(a, e)
        if layer.kind not in ("windowsum", "spatialsum") or not self.is_const(b) or self.uses.get(a, 0) != 1:
            self.refuse(e, "division is only supported as the mean of a window or spatial sum")
        d = np.unique(self.val(b))
        shape = layer.ins[0].out.aval.shape
        n = int(np.prod(layer.attrs["window"])) if layer.kind == "windowsum" else \
            int(np.prod([shape[i] for i in layer.attrs["axes"]]))
        if d.size != 1 or d[0] != n:
            self.refuse(e, f"the divisor {d.tolist()} is not the window size {n}")
        if layer.kind == "windowsum" and any(p != (0, 0) for p in layer.attrs["padding"]):
            self.refuse(e, "an average pool whose float form counts padding as zeros differs from "
                           "TFLite's (padding not counted); use VALID padding")
        if layer.kind == "windowsum":
            layer.kind = "avgpool"
        else:  # over H, W of NHWC CMSIS-NN's average pool takes it, any other sum TFLite's MEAN
            gap = len(shape) == 4 and layer.attrs["axes"] == (1, 2) and not layer.attrs["keep"]
            layer.kind = "gap" if gap else "mean"
        self.fold(layer, a, out)

    def activation(self, e: Eqn, out) -> None:
        """jax.nn.sigmoid / jnp.tanh: TFLite's LOGISTIC / TANH."""
        self.emit(e.prim, [self.producer(e.ins[0], e)], out, e)

    def reshape(self, e: Eqn, out) -> None:
        self.emit("reshape", [self.producer(e.ins[0], e)], out, e, shape=tuple(out.aval.shape))

    def copy(self, e: Eqn, out) -> None:
        """A cast to the same dtype or a copy: a reshape to the same shape."""
        if e.ins[0].aval.dtype != out.aval.dtype:
            self.refuse(e, _UNSUPPORTED)
        self.reshape(e, out)


# primitive -> its rule (the one table of what quantize() accepts)
RULES = {"conv_general_dilated": _Builder.conv, "dot_general": _Builder.dense, "add": _Builder.add, "sub": _Builder.sub,
         "mul": _Builder.mul,
         "max": _Builder.relu, "reduce_window_max": _Builder.maxpool, "reduce_window_sum": _Builder.windowsum,
         "reduce_sum": _Builder.spatialsum, "div": _Builder.mean, "broadcast_in_dim": _Builder.broadcast,
         "pad": _Builder.pad, "transpose": _Builder.transpose, "concatenate": _Builder.concatenate,
         "gather": _Builder.movement, "slice": _Builder.movement, "split": _Builder.split, "rev": _Builder.movement,
         "logistic": _Builder.activation, "scan": _Builder.scan,
         "tanh": _Builder.activation,
         **{prim: _Builder.reshape for prim in _SHAPE_ONLY},
         **{prim: _Builder.copy for prim in ("convert_element_type", "copy", "copy_p", "stop_gradient")}}


def _res(alias, a):
    while a in alias:
        a = alias[a]
    return a


def _pool(e: Eqn, refuse, emit, producer, kind: str):
    x = e.ins[0]
    p = e.params
    dims, strides, pads = tuple(p["window_dimensions"]), tuple(p["window_strides"]), tuple(map(tuple, p["padding"]))
    if len(dims) != 4 or dims[0] != 1 or dims[3] != 1 or strides[0] != 1 or strides[3] != 1 \
            or pads[0] != (0, 0) or pads[3] != (0, 0):
        refuse(e, "only pools over H and W of an NHWC tensor")
    if set(p["base_dilation"]) != {1} or set(p["window_dilation"]) != {1}:
        refuse(e, "dilated pooling windows are not supported")
    emit(kind, [producer(x, e)], e.outs[0], e, window=dims[1:3], stride=strides[1:3], padding=pads[1:3])
