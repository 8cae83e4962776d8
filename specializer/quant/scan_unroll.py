"""A lax.scan quantize() reads as no one block (any scan but an LSTM's: a GRU, a running
filter), unrolled into its steps, as the same loop written in Python would have traced.

The jaxpr is traced again (jax.make_jaxpr) through an interpreter that binds every equation as
it is, except the scans named: their body runs once per step, on that step's slice of the
scanned inputs (lax.index_in_dim: a slice and a squeeze), the carries passed on, the per-step
outputs stacked (a leading axis each, concatenated) where the program reads them. Calls are inlined on the way
(graph.flatten inlines them anyway). Each step's operations then become layers like any others,
with their own calibrated quantization; the weights the steps share are stored once (ptq.py).
"""

from __future__ import annotations

import jax
from jax import lax
from jax._src import source_info_util
from jax.extend import core

from specializer.quant.graph import CALLS, QuantizeError, sub_jaxpr

MAX_STEPS = 256  # past this, an unrolled model's code grows past what a microcontroller holds


def unroll(closed: core.ClosedJaxpr, body) -> core.ClosedJaxpr:
    """`closed` with every scan of body `body` (its params' "jaxpr", graph.ScanToUnroll.body)
    unrolled: the copies an unrolled outer scan made of an inner one share it, and go in one pass."""
    def run(*args):
        return _eval(closed.jaxpr, closed.consts, list(args), body)

    specs = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]
    return jax.make_jaxpr(run)(*specs)


def _eval(jaxpr: core.Jaxpr, consts, args: list, body) -> list:
    env: dict = {}

    def read(a):
        return a.val if isinstance(a, core.Literal) else env[a]

    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    read_later = {a for e in jaxpr.eqns for a in e.invars if not isinstance(a, core.Literal)}
    read_later |= {a for a in jaxpr.outvars if not isinstance(a, core.Literal)}
    for e in jaxpr.eqns:
        ins = [read(a) for a in e.invars]
        sub = sub_jaxpr(e) if e.primitive.name in CALLS else None
        if e.primitive.name == "scan" and e.params["jaxpr"] is body:
            outs = _steps(e, ins, [v in read_later for v in e.outvars], body)
        elif sub is not None:
            inner = sub.jaxpr if isinstance(sub, core.ClosedJaxpr) else sub
            outs = _eval(inner, sub.consts if isinstance(sub, core.ClosedJaxpr) else (), ins[:len(inner.invars)],
                         body)
        else:  # as jax.core.eval_jaxpr binds it, its source line kept for quantize()'s messages
            with source_info_util.user_context(e.source_info.traceback), e.ctx.manager:
                outs = e.primitive.bind(*ins, **e.primitive.get_bind_params(e.params))
            outs = outs if e.primitive.multiple_results else [outs]
        env.update(zip(e.outvars, outs))
    return [read(a) for a in jaxpr.outvars]


def _steps(e, ins: list, wanted: list, body) -> list:
    """The scan's carries after its last step, then its stacked per-step outputs (None where
    nothing reads them: no layer is made for them)."""
    p = e.params
    nc, ncarry, length = p["num_consts"], p["num_carry"], p["length"]
    if not 0 < length <= MAX_STEPS:
        raise QuantizeError(f"quantize: a lax.scan of {length} steps that is not an LSTM: quantize() unrolls such "
                            f"a scan into its steps, 1 to {MAX_STEPS} of them")
    consts, carry, xs = ins[:nc], ins[nc:nc + ncarry], ins[nc + ncarry:]
    ys: list = [None] * length
    for t in (reversed(range(length)) if p["reverse"] else range(length)):
        frame = [lax.index_in_dim(x, t, 0, keepdims=False) for x in xs]
        outs = _eval(body.jaxpr, body.consts, [*consts, *carry, *frame], body)
        carry, ys[t] = outs[:ncarry], outs[ncarry:]
    # stacked as a Python loop's outputs would be: each step's given a leading axis, concatenated
    # (no `stack` primitive: no int8 block has that)
    stacked = [lax.concatenate([lax.expand_dims(y[k], (0,)) for y in ys], 0) if wanted[ncarry + k] else None
               for k in range(len(ys[0]))]
    return [*carry, *stacked]
