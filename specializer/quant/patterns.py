"""The patterns of several equations one quantize() layer stands for (graph.py's builder asks
each finder, before its one-equation rules): jax.nn.softmax, jax.nn.leaky_relu and
jax.nn.hard_swish, as jax traces them. A finder returns equation index -> None (absorbed into the
layer) or (kind, input var, output var, attrs) at the equation the layer's output comes from;
an intermediate read elsewhere keeps the equations apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from jax.extend import core


@dataclass
class Eqn:
    prim: str
    ins: list          # Var (activation or constant) or Literal
    outs: list
    params: dict
    where: str
    primitive: object  # the jax Primitive, to evaluate the equation


def is_const(a, consts) -> bool:
    """A literal, or a value the builder folded to a constant (`consts`)."""
    return isinstance(a, core.Literal) or a in consts


def value(a, consts):
    return np.asarray(a.val) if isinstance(a, core.Literal) else consts[a]


def softmax_groups(eqns: list[Eqn], consts, outvars) -> dict:
    """Find jax.nn.softmax over the last axis: div(exp(x - bcast(max(x))), bcast(sum(exp(...)))).
    Returns eqn index -> None (absorbed into the softmax) or ("softmax", x, out var, {}) at its
    final div."""
    defs, readers = _uses(eqns, outvars)
    groups: dict = {}

    def through(v, prims):
        """Follow single-input shape/identity eqns back; returns (var, eqn indices)."""
        seen = []
        while v in defs and eqns[defs[v]].prim in prims:
            i = defs[v]
            seen.append(i)
            e = eqns[i]
            nonconst = [a for a in e.ins if not is_const(a, consts)]
            if len(nonconst) != 1:
                break
            v = nonconst[0]
        return v, seen

    for i, e in enumerate(eqns):
        if e.prim != "div" or e.ins[0] not in defs:
            continue
        j = defs[e.ins[0]]
        if eqns[j].prim != "exp" or eqns[j].ins[0] not in defs:
            continue
        s_var, s_path = through(e.ins[1], ("broadcast_in_dim", "reshape"))
        if s_var not in defs or eqns[defs[s_var]].prim != "reduce_sum" or eqns[defs[s_var]].ins[0] is not e.ins[0]:
            continue
        k = defs[eqns[j].ins[0]]
        sub = eqns[k]
        if sub.prim != "sub":
            continue
        x = sub.ins[0]
        m_var, m_path = through(sub.ins[1], ("broadcast_in_dim", "reshape", "stop_gradient", "max"))
        if m_var not in defs or eqns[defs[m_var]].prim != "reduce_max":
            continue
        rank = len(x.aval.shape)
        rmax, rsum = eqns[defs[m_var]], eqns[defs[s_var]]
        if rmax.ins[0] is not x or tuple(rmax.params["axes"]) != (rank - 1,) \
                or tuple(rsum.params["axes"]) != (rank - 1,):
            continue
        members = [defs[m_var], k, j, defs[s_var]] + m_path + s_path
        inside = set(members) | {i}
        if any(not readers.get(o, set()) <= inside for m in members for o in eqns[m].outs):
            continue  # an intermediate is read elsewhere: not a plain softmax
        for m in members:
            groups[m] = None
        groups[i] = ("softmax", x, e.outs[0], {})
    return groups


def _uses(eqns: list[Eqn], outvars) -> tuple[dict, dict]:
    """(var -> index of the equation defining it, var -> indices of the equations reading it;
    -1 for a model output)."""
    defs, readers = {}, {}
    for i, e in enumerate(eqns):
        for o in e.outs:
            defs[o] = i
        for a in e.ins:
            if not isinstance(a, core.Literal):
                readers.setdefault(a, set()).add(i)
    for a in outvars:
        readers.setdefault(a, set()).add(-1)
    return defs, readers


def _scalar(a, consts) -> float | None:
    """A constant or literal holding one value (any shape), else None."""
    if not is_const(a, consts):
        return None
    v = np.unique(np.asarray(value(a, consts)))
    return float(v[0]) if v.size == 1 else None


def _only_read_inside(members: list[int], inside: set, eqns: list[Eqn], readers: dict) -> bool:
    return all(readers.get(o, set()) <= inside for m in members for o in eqns[m].outs)


def leaky_relu_groups(eqns: list[Eqn], consts, outvars) -> dict:
    """jax.nn.leaky_relu: select_n(ge(x, 0), alpha * x, x). eqn index -> None (absorbed) or
    ("leaky_relu", x, out var, {"alpha": alpha}) at the select."""
    defs, readers = _uses(eqns, outvars)
    groups: dict = {}
    for i, e in enumerate(eqns):
        if e.prim != "select_n" or len(e.ins) != 3 or any(isinstance(a, core.Literal) or a not in defs
                                                           for a in e.ins[:2]):
            continue
        pred, neg, x = eqns[defs[e.ins[0]]], eqns[defs[e.ins[1]]], e.ins[2]
        if pred.prim != "ge" or pred.ins[0] is not x or _scalar(pred.ins[1], consts) != 0.0 or neg.prim != "mul":
            continue
        others = [a for a in neg.ins if a is not x]
        alpha = _scalar(others[0], consts) if len(others) == 1 else None
        members = [defs[e.ins[0]], defs[e.ins[1]]]
        if alpha is None or not _only_read_inside(members, set(members) | {i}, eqns, readers):
            continue
        groups.update({m: None for m in members})
        groups[i] = ("leaky_relu", x, e.outs[0], {"alpha": alpha})
    return groups


def hard_swish_groups(eqns: list[Eqn], consts, outvars) -> dict:
    """jax.nn.hard_swish: x * (min(max(x + 3, 0), 6) / 6). eqn index -> None (absorbed) or
    ("hard_swish", x, out var, {}) at the product."""
    defs, readers = _uses(eqns, outvars)
    groups: dict = {}

    def step(v, prim, const):
        """The equation defining v if it is `prim` of one activation and the scalar `const`."""
        if isinstance(v, core.Literal) or v not in defs or eqns[defs[v]].prim != prim:
            return None
        d = eqns[defs[v]]
        acts = [a for a in d.ins if not is_const(a, consts)]
        k = [a for a in d.ins if is_const(a, consts)]
        if len(acts) != 1 or len(k) != 1 or _scalar(k[0], consts) != const or (prim == "div" and d.ins[0] is not acts[0]):
            return None
        return defs[v], acts[0]

    for i, e in enumerate(eqns):
        if e.prim != "mul" or len(e.ins) != 2:
            continue
        for x, gate in (e.ins, e.ins[::-1]):
            chain, v = [], gate
            for prim, const in (("div", 6.0), ("min", 6.0), ("max", 0.0), ("add", 3.0)):
                found = step(v, prim, const)
                if found is None:
                    break
                chain.append(found[0])
                v = found[1]
            else:
                if v is x and _only_read_inside(chain, set(chain) | {i}, eqns, readers):
                    groups.update({m: None for m in chain})
                    groups[i] = ("hard_swish", x, e.outs[0], {})
                    break
    return groups


GROUPS = (softmax_groups, leaky_relu_groups, hard_swish_groups)
