"""A jaxpr of integer operations evaluated with NumPy, with XLA's integer semantics.

The int8 activations are tables of TFLite's fixed-point arithmetic over the 256 int8 inputs
(activations._table). Evaluated by JAX op by op, each of their few dozen distinct operations is
compiled by XLA on its own in every fresh process (a capture worker's), about 0.1 s each: a GRU's
six tables took 10 s of its capture. Traced once into a jaxpr and run here, a table takes a few
milliseconds. Only the primitives those functions use are known; any other raises Unsupported and
the caller evaluates with JAX instead.

Semantics kept equal to XLA's: integer add, sub, mul and neg wrap; shifts by a count outside
[0, bits) give 0 (left, logical right) or the sign (arithmetic right); division truncates
toward zero (by zero: -1, the remainder the dividend); conversions between integer types wrap;
bitcasts reinterpret the bits. Only bool and integers of up to 32 bits: an operation on any
other type (floats, whose rounding and conversions are XLA's own) raises Unsupported, as does a
result whose type or shape is not the one the jaxpr states.
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
    if op == "arithmetic":  # of the bits as signed, whatever the type
        v = x.view(np.dtype(f"i{x.dtype.itemsize}"))
        return np.where(inside, np.right_shift(v, count.astype(v.dtype)), np.where(v < 0, -1, 0)).astype(
            v.dtype).view(x.dtype)
    u = x.view(np.dtype(f"u{x.dtype.itemsize}"))
    return np.where(inside, np.right_shift(u, count.astype(u.dtype)), 0).astype(u.dtype).view(x.dtype)


def _div(a, b):
    """Truncating division; by zero XLA gives -1 (all ones for an unsigned type)."""
    zero = b == 0
    d = np.where(zero, 1, b).astype(np.int64)
    q = np.abs(a.astype(np.int64)) // np.abs(d)
    q = np.where((a < 0) != (d < 0), -q, q)
    return np.where(zero, -1, q).astype(a.dtype)


def _rem(a, b):
    """The remainder of _div, the sign of a; by zero XLA gives a."""
    zero = b == 0
    r = a.astype(np.int64) - _div(a, np.where(zero, 1, b).astype(b.dtype)).astype(np.int64) * b.astype(np.int64)
    return np.where(zero, a, r).astype(a.dtype)


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


def _integer(dtype) -> bool:
    """bool or an integer type of at most 32 bits: what the semantics above are written for."""
    dtype = np.dtype(dtype)
    return dtype == np.bool_ or (dtype.kind in "iu" and dtype.itemsize <= 4)


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
        name = eqn.primitive.name
        if any(not _integer(v.aval.dtype) for v in (*eqn.invars, *eqn.outvars)):
            raise Unsupported(f"{name} on {[str(v.aval) for v in eqn.invars]}")  # floats: XLA's own rules
        ins = [read(v) for v in eqn.invars]
        if name in ("jit", "pjit"):
            inner = eqn.params["jaxpr"]
            outs = _eval(inner.jaxpr, inner.consts, ins)
        else:
            outs = [_apply(name, eqn.params, [np.asarray(i) for i in ins])]
        for v, o in zip(eqn.outvars, outs):
            o = np.asarray(o)
            if o.dtype != v.aval.dtype or o.shape != tuple(v.aval.shape):
                raise Unsupported(f"{name} gave {o.dtype}{list(o.shape)} for {v.aval}")
            env[v] = o
    return [read(v) for v in jaxpr.outvars]
