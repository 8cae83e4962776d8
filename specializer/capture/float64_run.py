"""The model's function run once more with every float32 value in float64 (capture worker).

A model's outputs are judged against JAX's float32 outputs. How far a correct build may be from
them depends on the program: a chain of logs, divisions and powers grows the ulp or two by which
two libms differ. The float32 reference's own distance from the same program in float64 measures
what float32 arithmetic costs this program (tolerance.py turns it into the model's tolerance).

The function is traced to a jaxpr and interpreted with float32 replaced by float64 everywhere: its
inputs, weights, literals and constants, and the dtypes the equations name (a cast to float32, a
dot's accumulator). Control flow (scan, while, cond) runs as Python loops over the same
interpreter, so a float32 scan carry the program wrote is widened too, which running the Python
function under x64 cannot do. What it cannot run in float64 (a bitcast of a float, a primitive it
does not know to carry a sub-program) is said in one phrase instead; the default tolerance then
stands.
"""

from __future__ import annotations

import time

import numpy as np

MAX_SECONDS = 60.0  # a float64 loop that runs away (a convergence loop that converges later)

_CALLS = {"pjit": "jaxpr", "jit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
          "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
          "custom_vjp_call_jaxpr": "fun_jaxpr", "checkpoint": "jaxpr", "remat": "jaxpr"}
_REFUSED = {"bitcast_convert_type": "a float's bits reinterpreted (bitcast_convert_type)"}


class Unsupported(Exception):
    """What stops the float64 run, in a phrase."""


def run(fn, args: list[np.ndarray]) -> list[np.ndarray]:
    """`fn(*args)`'s outputs computed in float64 (the leaves, in order); Unsupported if not."""
    import jax

    closed = jax.make_jaxpr(fn)(*args)
    deadline = time.monotonic() + MAX_SECONDS
    with jax.enable_x64(True):
        outs = _eval(closed.jaxpr, [_wide(c) for c in closed.consts], [_wide(a) for a in args], deadline)
    return [np.asarray(o) for o in outs]


def _wide(value):
    a = np.asarray(value)
    return a.astype(np.float64) if a.dtype == np.float32 else a


def _wide_dtype(d):
    return np.dtype(np.float64) if d is not None and _is_f32(d) else d


def _is_f32(d) -> bool:
    try:
        return np.dtype(d) == np.float32
    except TypeError:
        return False


def _eval(jaxpr, consts: list, args: list, deadline: float) -> list:
    env: dict = {}

    def read(v):
        return _wide(v.val) if type(v).__name__ == "Literal" else env[v]

    for var, val in zip(jaxpr.constvars, consts):
        env[var] = val
    for var, val in zip(jaxpr.invars, args):
        env[var] = val
    for eqn in jaxpr.eqns:
        if time.monotonic() > deadline:
            raise Unsupported(f"the float64 run took over {MAX_SECONDS:g} s")
        outs = _apply(eqn, [read(v) for v in eqn.invars], deadline)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        for var, val in zip(eqn.outvars, outs):
            if type(var).__name__ != "DropVar":
                env[var] = val
    return [read(v) for v in jaxpr.outvars]


def _closed(c, args: list, deadline: float) -> list:
    """Run a ClosedJaxpr (or an open Jaxpr) on `args`."""
    if hasattr(c, "consts"):
        return _eval(c.jaxpr, [_wide(k) for k in c.consts], args, deadline)
    return _eval(c, [], args, deadline)


def _apply(eqn, vals: list, deadline: float):
    name, p = eqn.primitive.name, eqn.params
    if name in _REFUSED:
        raise Unsupported(_REFUSED[name])
    if name in _CALLS and _CALLS[name] in p:
        return _closed(p[_CALLS[name]], vals, deadline)
    if name == "scan":
        return _scan(eqn, vals, deadline)
    if name == "while":
        return _while(p, vals, deadline)
    if name == "cond":
        index = int(np.asarray(vals[0]))
        branches = p["branches"]
        return _closed(branches[min(max(index, 0), len(branches) - 1)], vals[1:], deadline)
    if any(_is_program(v) for v in p.values()):
        raise Unsupported(f"primitive '{name}' carries a sub-program this run does not interpret")
    params = {k: _wide_dtype(v) if k in ("new_dtype", "dtype", "preferred_element_type") else v
              for k, v in p.items()}
    return eqn.primitive.bind(*vals, **params)


def _is_program(v) -> bool:
    kinds = ("Jaxpr", "ClosedJaxpr")
    return type(v).__name__ in kinds or (isinstance(v, tuple) and any(type(x).__name__ in kinds for x in v))


def _scan(eqn, vals: list, deadline: float) -> list:
    p = eqn.params
    n_const, n_carry, length = p["num_consts"], p["num_carry"], p["length"]
    consts, carry, xs = vals[:n_const], vals[n_const:n_const + n_carry], vals[n_const + n_carry:]
    ys: list = [None] * length
    for i in (reversed(range(length)) if p["reverse"] else range(length)):
        out = _closed(p["jaxpr"], [*consts, *carry, *(np.asarray(x)[i] for x in xs)], deadline)
        carry, ys[i] = out[:n_carry], out[n_carry:]
    stacked = []
    for k, var in enumerate(eqn.outvars[n_carry:]):
        if length:
            stacked.append(np.stack([np.asarray(y[k]) for y in ys]))
        else:
            stacked.append(np.zeros(var.aval.shape, _wide_dtype(var.aval.dtype)))
    return [*carry, *stacked]


def _while(p: dict, vals: list, deadline: float) -> list:
    nc, nb = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, state = vals[:nc], vals[nc:nc + nb], vals[nc + nb:]
    while bool(np.asarray(_closed(p["cond_jaxpr"], [*cond_consts, *state], deadline)[0])):
        state = _closed(p["body_jaxpr"], [*body_consts, *state], deadline)
        if time.monotonic() > deadline:
            raise Unsupported(f"the float64 run took over {MAX_SECONDS:g} s")
    return state
