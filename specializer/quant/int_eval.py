"""A jaxpr of integer operations evaluated with NumPy, with XLA's integer semantics.

The int8 activations are tables of TFLite's fixed-point arithmetic over the 256 int8 inputs
(activations._table). Evaluated by JAX op by op, each of their few dozen distinct operations is
compiled by XLA on its own in every fresh process (a capture worker's), about 0.1 s each: a GRU's
six tables took 10 s of its capture. Traced once into a jaxpr and run here, a table takes a few
milliseconds. Only the primitives those functions use are known; any other raises Unsupported and
the caller evaluates with JAX instead.

Semantics kept equal to XLA's: integer add, sub, mul and neg wrap; shifts by a count outside
[0, bits) give 0 (left, logical right) or the sign (arithmetic right); division truncates
toward zero; conversions between integer types wrap; bitcasts reinterpret the bits.
"""

from __future__ import annotations

import numpy as np


class Unsupported(Exception):
    """A primitive this evaluator does not know."""


def _shift(x, s, op):
    bits = x.dtype.itemsize * 8
    s = np.asarray(s)
    inside = (s >= 0) & (s < bits)
    count = np.where(inside, s, 0).astype(x.dtype)
    if op == "left":
        return np.where(inside, np.left_shift(x, count), 0).astype(x.dtype)
    if op == "arithmetic":
        return np.where(inside, np.right_shift(x, count), np.where(x < 0, -1, 0)).astype(x.dtype)
    u = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    return np.where(inside, np.right_shift(u, count.astype(u.dtype)), 0).astype(u.dtype).view(x.dtype)


def _div(a, b):
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


def _rem(a, b):
    return (a.astype(np.int64) - _div(a, b).astype(np.int64) * b.astype(np.int64)).astype(a.dtype)


def _broadcast(x, shape, dims):
    expanded = np.reshape(x, [x.shape[dims.index(i)] if i in dims else 1 for i in range(len(shape))])
    return np.broadcast_to(expanded, shape)


_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or,
           "xor": np.bitwise_xor, "max": np.maximum, "min": np.minimum, "eq": np.equal, "ne": np.not_equal,
           "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "div": _div, "rem": _rem}


def _apply(prim: str, params: dict, args: list):
    if prim in _BINARY:
        a, b = np.asarray(args[0]), np.asarray(args[1])
        with np.errstate(over="ignore"):
            out = _BINARY[prim](a, b)
        return out if out.dtype == np.bool_ else out.astype(np.result_type(a.dtype, b.dtype))
    if prim == "neg":
        return np.negative(args[0])
    if prim == "not":
        return np.invert(args[0])
    if prim == "abs":
        return np.abs(args[0])
    if prim == "shift_left":
        return _shift(args[0], args[1], "left")
    if prim == "shift_right_arithmetic":
        return _shift(args[0], args[1], "arithmetic")
    if prim == "shift_right_logical":
        return _shift(args[0], args[1], "logical")
    if prim == "select_n":
        which = np.asarray(args[0]).astype(np.int64)
        return np.choose(which, np.broadcast_arrays(*args[1:]))
    if prim == "clamp":
        return np.minimum(np.maximum(args[1], args[0]), args[2])
    if prim == "convert_element_type":
        return np.asarray(args[0]).astype(np.dtype(params["new_dtype"]))
    if prim == "bitcast_convert_type":
        return np.asarray(args[0]).view(np.dtype(params["new_dtype"]))
    if prim == "broadcast_in_dim":
        return _broadcast(np.asarray(args[0]), tuple(params["shape"]), tuple(params["broadcast_dimensions"]))
    if prim == "reshape":
        return np.reshape(args[0], params["new_sizes"])
    if prim == "squeeze":
        return np.squeeze(args[0], axis=tuple(params["dimensions"]))
    if prim == "iota":
        return np.broadcast_to(np.reshape(np.arange(params["shape"][params["dimension"]], dtype=params["dtype"]),
                                          [-1 if i == params["dimension"] else 1 for i in range(len(params["shape"]))]),
                               params["shape"])
    raise Unsupported(prim)


def run(closed, *args) -> list:
    """The outputs of `closed` (a ClosedJaxpr) on NumPy arrays."""
    return _eval(closed.jaxpr, closed.consts, list(args))


def _eval(jaxpr, consts, args) -> list:
    env = {}

    def read(v):
        return np.asarray(v.val, dtype=v.aval.dtype) if hasattr(v, "val") else env[v]

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = np.asarray(c)
    for v, a in zip(jaxpr.invars, args):
        env[v] = np.asarray(a)
    for eqn in jaxpr.eqns:
        ins = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        if name in ("jit", "pjit"):
            inner = eqn.params["jaxpr"]
            outs = _eval(inner.jaxpr, inner.consts, ins)
        else:
            outs = [_apply(name, eqn.params, [np.asarray(i) for i in ins])]
        for v, o in zip(eqn.outvars, outs):
            aval = v.aval
            env[v] = np.asarray(o, dtype=aval.dtype).reshape(aval.shape)
    return [read(v) for v in jaxpr.outvars]
