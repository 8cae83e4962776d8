"""An LSTM written with lax.scan, recognized in a float model's jaxpr (quantize()'s `lstm` layer).

What a user writes, in any of the usual spellings:

    def step(carry, x):                       # x [batch, n] or [n]
        h, c = carry                          # (or c, h)
        z = x @ wx + h @ wh + b               # a product per gate, one split four ways, or one
                                              # of x and h joined: jnp.concatenate([x, h], -1) @ w
        i, f, g, o = jnp.split(z, 4, -1)      # any gate order, slices as well as split
        c = sigmoid(f) * c + sigmoid(i) * tanh(g)
        h = sigmoid(o) * tanh(c)
        return (h, c), h
    _, hs = lax.scan(step, (zeros, zeros), xs)          # xs [time, batch, n] or [time, n]

The body is read backwards from the new carries: the cell update's two products (one with the
old cell: the forget gate), the hidden state's product with tanh(new cell) (the output gate);
each gate's pre-activation must be linear in (x, h) with constant weights: products with
constants, adds, a constant bias, split or sliced along the last axis. The four gates come out
as float weights in the block's order (forget, input, cell, output), and `check` runs the
float LSTM they define against the scan itself on a probe input: a body that only looks like an
LSTM is refused, never quantized as one.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core

GATES = ("forget", "input", "cell", "output")  # the block's order (params.LstmParams)


@dataclass(frozen=True)
class Lstm:
    """A recognized LSTM: float weights per gate (forget, input, cell, output)."""
    wx: np.ndarray  # [4, n, cells]
    wh: np.ndarray  # [4, cells, cells]
    b: np.ndarray  # [4, cells]
    batched: bool  # xs [time, batch, n] (else [time, n])

    @property
    def cells(self) -> int:
        return self.wh.shape[-1]

    def run(self, xs):
        """The float LSTM on xs (time-major), from zero states: (every step's h, max |c| over the steps)."""
        xs3 = xs if self.batched else xs[:, None, :]
        zeros = jnp.zeros((xs3.shape[1], self.cells), jnp.float32)

        def step(carry, x):
            h, c = carry
            z = [x @ self.wx[k] + h @ self.wh[k] + self.b[k] for k in range(4)]
            c = jax.nn.sigmoid(z[0]) * c + jax.nn.sigmoid(z[1]) * jnp.tanh(z[2])
            h = jax.nn.sigmoid(z[3]) * jnp.tanh(c)
            return (h, c), (h, jnp.max(jnp.abs(c)))

        _, (hs, cmax) = jax.lax.scan(step, (zeros, zeros), xs3)
        return (hs if self.batched else hs[:, 0, :]), jnp.max(cmax)


class _Body:
    """The scan body's equations by output, inlined (graph.flatten), its constants known."""

    def __init__(self, eqns, consts: dict, x, h):
        self.made = {o: e for e in eqns for o in e.outs}
        self.consts, self.x, self.h = consts, x, h

    def eqn(self, v, prim: str):
        e = self.made.get(v)
        return e if e is not None and e.prim == prim else None

    def unary(self, v, prim: str):
        e = self.eqn(v, prim)
        return e.ins[0] if e is not None else None

    def mul_of(self, v) -> tuple | None:
        e = self.eqn(v, "mul")
        return tuple(e.ins) if e is not None else None

    def const(self, v):
        if isinstance(v, core.Literal):
            return np.asarray(v.val, np.float32)
        return self.consts.get(v)

    def _product(self, a, w: np.ndarray, n: int, cells: int, width: int):
        """a @ w's share of the gates: a the input, the hidden state, or both joined (w's rows split)."""
        wx, wh, row = np.zeros((n, width)), np.zeros((cells, width)), 0
        for part in _joined(self, a):
            k = part.aval.shape[-1]
            if part is self.x:
                wx = wx + w[row:row + k]
            elif part is self.h:
                wh = wh + w[row:row + k]
            else:
                return None
            row += k
        return wx, wh, np.zeros(width)

    def linear(self, v, n: int, cells: int, width: int):
        """v's value as x @ wx + h @ wh + b with constant wx [n, width], wh [cells, width], b [width];
        None if it is not."""
        k = self.const(v)
        if k is not None:
            if np.size(k) == 1:  # a scalar (a literal added to every gate)
                return np.zeros((n, width)), np.zeros((cells, width)), np.full(width, float(np.ravel(k)[0]))
            if np.shape(k)[-1:] != (width,):
                return None
            k = np.broadcast_to(np.asarray(k, np.float32), v.aval.shape).reshape(-1, width)
            if not (k == k[:1]).all():
                return None  # not one bias for every row
            return np.zeros((n, width)), np.zeros((cells, width)), k[0].astype(np.float64)
        e = self.made.get(v)
        if e is None:
            return None
        if e.prim == "add":
            parts = [self.linear(a, n, cells, width) for a in e.ins]
            return None if None in parts else tuple(p + q for p, q in zip(*parts))
        if e.prim == "broadcast_in_dim":
            return self.linear(e.ins[0], n, cells, width) if self.const(e.ins[0]) is not None else None
        if e.prim == "convert_element_type" and e.ins[0].aval.dtype == v.aval.dtype:
            return self.linear(e.ins[0], n, cells, width)
        if e.prim == "dot_general":
            a, w = e.ins
            (lc, rc), (lb, rb) = e.params["dimension_numbers"]
            wv = self.const(w)
            if wv is None or wv.ndim != 2 or lb or rb or tuple(rc) != (0,) or tuple(lc) != (a.aval.ndim - 1,):
                return None
            return self._product(a, wv.astype(np.float64), n, cells, width)
        if e.prim in ("split", "slice"):
            src = e.ins[0]
            full = src.aval.shape[-1]
            if e.prim == "split":
                if e.params["axis"] not in (-1, src.aval.ndim - 1):
                    return None
                j = e.outs.index(v)
                start = int(sum(e.params["sizes"][:j]))
                cols = range(start, start + int(e.params["sizes"][j]))
            else:
                starts, limits, strides = e.params["start_indices"], e.params["limit_indices"], e.params["strides"]
                if any(s != 0 or lim != d for s, lim, d in zip(starts[:-1], limits[:-1], src.aval.shape[:-1])):
                    return None
                cols = range(starts[-1], limits[-1], (strides or [1] * len(starts))[-1])
            whole = self.linear(src, n, cells, full)
            return None if whole is None else tuple(p[..., list(cols)] for p in whole)
        return None


def _joined(body: _Body, a):
    """The parts of a, an activation joined along its last axis (jnp.concatenate([x, h], -1)), else (a,)."""
    e = body.made.get(a)
    if e is not None and e.prim == "concatenate" and e.params["dimension"] == a.aval.ndim - 1:
        return tuple(e.ins)
    return (a,)


def match(eqn, consts: dict, flatten) -> Lstm | str:
    """The LSTM a scan equation (graph.Eqn) computes, or why it is not one (a phrase); flatten:
    graph.flatten, which inlines the body's calls (graph, the caller, owns it)."""
    try:
        return _match(eqn, consts, flatten)
    except (ValueError, TypeError, IndexError, KeyError) as e:  # a body shaped unlike any LSTM
        return f"its body could not be read as an LSTM cell ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"


def _match(eqn, consts: dict, flatten) -> Lstm | str:
    p = eqn.params
    nc, ncarry = p["num_consts"], p["num_carry"]
    if p["reverse"]:
        return "a reversed scan"
    if ncarry != 2 or len(eqn.ins) != nc + 3:
        return f"{ncarry} carries and {len(eqn.ins) - nc - ncarry} scanned inputs (an LSTM carries h and c over one input)"
    if not all(isinstance(a, core.Literal) or a in consts for a in eqn.ins[:nc]):
        return "the body reads an activation other than its carries and input"
    for a in eqn.ins[nc:nc + 2]:
        v = consts.get(a) if not isinstance(a, core.Literal) else np.asarray(a.val)
        if v is None or np.any(v != 0):
            return "the states must start at zero (TFLite Micro's LSTM starts there)"
    xs = eqn.ins[nc + 2]
    if xs.aval.ndim not in (2, 3):
        return f"the scanned input is {list(xs.aval.shape)}: want [time, batch, features] or [time, features]"
    body = p["jaxpr"]
    inner = dict(consts)
    eqns, alias = flatten(body, inner)
    invars = body.jaxpr.invars
    for v, a in zip(invars[:nc], eqn.ins[:nc]):
        inner[v] = np.asarray(a.val) if isinstance(a, core.Literal) else consts[a]
    for e in eqns:  # what the weights alone compute inside the body (a bias scaled, a weight transposed)
        if all(isinstance(a, core.Literal) or a in inner for a in e.ins):
            vals = e.primitive.bind(*[np.asarray(a.val) if isinstance(a, core.Literal) else inner[a] for a in e.ins],
                                    **e.params)
            inner.update(zip(e.outs, [np.asarray(v) for v in (vals if e.primitive.multiple_results else [vals])]))
    c0, c1, x = invars[nc], invars[nc + 1], invars[nc + 2]
    outs = []
    for v in body.jaxpr.outvars:  # through the inlined calls' aliases
        while not isinstance(v, core.Literal) and v in alias:
            v = alias[v]
        outs.append(v)
    if len(outs) != 3:
        return f"the body returns {len(outs)} values (want the two new states and the step's output)"
    n, cells = x.aval.shape[-1], c0.aval.shape[-1]
    for h, c, hn, cn in ((c0, c1, outs[0], outs[1]), (c1, c0, outs[1], outs[0])):
        gates = _gates(_Body(eqns, inner, x, h), c, hn, cn)
        if gates is None:
            continue
        if outs[2] is not hn:
            return "the step's output is not its new hidden state"
        lin = [_Body(eqns, inner, x, h).linear(g, n, cells, cells) for g in gates]
        if None in lin:
            return "a gate is not x @ w + h @ u + b with constant weights"
        m = Lstm(*(np.stack([q[i] for q in lin]).astype(np.float32) for i in range(3)), xs.aval.ndim == 3)
        return m if _same(m, eqn, consts) else "the body computes something else than the LSTM it resembles"
    return "the body is not an LSTM cell (c = sigmoid(f) * c + sigmoid(i) * tanh(g), h = sigmoid(o) * tanh(c))"


def _gates(b: _Body, c, hn, cn):
    """(f, i, g, o) pre-activations, from the new states' structure; None if it is not an LSTM's."""
    out = b.mul_of(hn)
    add = b.eqn(cn, "add")
    if out is None or add is None:
        return None
    o = next((b.unary(s, "logistic") for s, t in (out, out[::-1]) if b.unary(t, "tanh") is cn), None)
    f = i = g = None
    for p, q in (tuple(add.ins), tuple(add.ins)[::-1]):
        pm, qm = b.mul_of(p), b.mul_of(q)
        if pm is None or qm is None:
            continue
        fs = next((b.unary(s, "logistic") for s, t in (pm, pm[::-1]) if t is c), None)
        ig = next(((b.unary(s, "logistic"), b.unary(t, "tanh")) for s, t in (qm, qm[::-1])
                   if b.unary(s, "logistic") is not None and b.unary(t, "tanh") is not None), None)
        if fs is not None and ig is not None:
            f, (i, g) = fs, ig
            break
    return None if None in (o, f, i, g) else (f, i, g, o)


def _same(m: Lstm, eqn, consts: dict) -> bool:
    """The recognized LSTM against the scan itself, run on a probe input."""
    xs = eqn.ins[-1]
    probe = np.random.default_rng(0).normal(size=xs.aval.shape).astype(np.float32)
    vals = [np.asarray(a.val) if isinstance(a, core.Literal) else consts[a] for a in eqn.ins[:-1]]
    got = np.asarray(eqn.primitive.bind(*vals, probe, **eqn.params)[2])
    want = np.asarray(m.run(jnp.asarray(probe))[0])
    return got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
