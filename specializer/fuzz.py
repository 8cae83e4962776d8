"""Differential testing: seeded random JAX programs, captured and run in every variant.

`program(seed)` writes the source of one program: a function `f(x, y)` of two float32 (or
int32) arrays built from a small grammar (elementwise arithmetic and math, reductions,
reshapes, transposes, slices, concatenations, pads, dots, fori_loop, cond), with example inputs
at the seed. `check(seed, dir)` captures it and compares every variant on QEMU against JAX.

The reference is op-by-op JAX (`jax.disable_jit()`): a program whose jit result differs from it
(XLA:CPU miscompiles some in-place fusions) is reported as such and not counted against the
tool. Capture compares QEMU against the jit result, so for the programs that are kept the two
references agree.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError

UNARY_F = ["jnp.exp(jnp.clip({a}, -8.0, 8.0))", "jnp.tanh({a})", "jnp.sin({a})", "jnp.cos({a})",
           "jnp.abs({a})", "jnp.sqrt(jnp.abs({a}) + 1.0)", "jnp.log(jnp.abs({a}) + 1.0)",
           "jax.nn.relu({a})", "jnp.negative({a})", "jnp.square({a})", "jnp.floor({a})",
           "jax.nn.sigmoid({a})", "jnp.arctan({a})", "jnp.log1p(jnp.abs({a}))"]
UNARY_I = ["jnp.abs({a})", "jnp.negative({a})", "{a} * 3", "jnp.clip({a}, -5, 5)", "{a} // 3", "{a} % 7"]
BINARY_F = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "jnp.maximum({a}, {b})", "jnp.minimum({a}, {b})",
            "{a} / (jnp.abs({b}) + 1.0)", "jnp.where({a} > {b}, {a}, {b} * 0.5)"]
BINARY_I = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "jnp.maximum({a}, {b})", "jnp.minimum({a}, {b})",
            "jnp.where({a} > {b}, {a}, {b})"]
SHAPED = ["jnp.sum({a}, axis=0, keepdims=True) + {a}", "jnp.max({a}, axis=1, keepdims=True) - {a}",
          "jnp.transpose({a}).T", "jnp.flip({a}, axis=0)",
          "jnp.concatenate([{a}[:, :{h}], {a}[:, {h}:]], axis=1)",
          "jnp.pad({a}[1:, :], ((0, 1), (0, 0)))", "jnp.cumsum({a}, axis=1)",
          "jnp.reshape(jnp.reshape({a}, (-1,)), ({r}, {c}))"]


@dataclass(frozen=True)
class Outcome:
    seed: int
    status: str  # pass | mismatch | refused | xla-differs
    detail: str = ""


def program(seed: int) -> str:
    """The source of program `seed` (deterministic)."""
    rnd = random.Random(seed)
    integer = rnd.random() < 0.25
    r, c = rnd.choice([(4, 8), (8, 8), (6, 10), (16, 4)])
    unary, binary = (UNARY_I, BINARY_I) if integer else (UNARY_F, BINARY_F)
    vals = ["x", "y"]
    lines = []
    for i in range(rnd.randint(3, 8)):
        kind = rnd.random()
        a, b = rnd.choice(vals), rnd.choice(vals)
        if kind < 0.35:
            expr = rnd.choice(unary).format(a=a)
        elif kind < 0.7:
            expr = rnd.choice(binary).format(a=a, b=b)
        elif kind < 0.85:
            expr = rnd.choice(SHAPED).format(a=a, h=c // 2, r=r, c=c)
        elif kind < 0.93 and not integer:
            expr = f"jnp.tanh({a} @ jnp.transpose({b}) @ {a} * 0.05)"
        elif kind < 0.97:
            expr = f"lax.fori_loop(0, {rnd.randint(1, 4)}, lambda i, v: v + {b} * 0.5, {a})" if not integer \
                else f"lax.fori_loop(0, {rnd.randint(1, 4)}, lambda i, v: v + {b}, {a})"
        else:
            expr = f"lax.cond(jnp.sum({a}) > 0, lambda: {a} + {b}, lambda: {a} - {b})"
        lines.append(f"    v{i} = {expr}")
        vals.append(f"v{i}")
    outs = rnd.sample(vals[2:], k=min(2, len(vals) - 2))
    dtype = "np.int32" if integer else "np.float32"
    gen = ("rng.integers(-20, 20, size=({r}, {c}))" if integer else "rng.normal(size=({r}, {c}))").format(r=r, c=c)
    return "\n".join([
        f'"""Random program {seed} (specializer.fuzz)."""',
        "import jax", "import jax.numpy as jnp", "import numpy as np", "from jax import lax", "",
        "", "def f(x, y):", *lines, f"    return {', '.join(outs)}", "", "",
        f"rng = np.random.default_rng({seed})",
        f"f.example_inputs = {{'x': {gen}.astype({dtype}), 'y': {gen}.astype({dtype})}}", ""])


def _references_agree(path: Path) -> str:
    """'' when jit and op-by-op JAX give the same outputs for the program at `path`, else why."""
    import importlib.util

    import jax
    import numpy as np

    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    args = list(mod.f.example_inputs.values())
    jitted = jax.jit(mod.f)(*args)
    with jax.disable_jit():
        eager = mod.f(*args)
    for a, b in zip(jax.tree_util.tree_leaves(jitted), jax.tree_util.tree_leaves(eager)):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind in "iu":
            if not np.array_equal(a, b):
                return "jit and op-by-op JAX differ (integer)"
        elif not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
            return "jit and op-by-op JAX differ"
    return ""


def check(seed: int, work: Path) -> Outcome:
    """Capture program `seed` and run every variant on QEMU against JAX."""
    from . import inputs
    from .capture import capture
    from .compare import compare

    work.mkdir(parents=True, exist_ok=True)
    src = work / f"prog{seed}.py"
    src.write_text(program(seed))
    differs = _references_agree(src)
    if differs:
        return Outcome(seed, "xla-differs", differs)
    try:
        c = capture(src, "f", work / "capture")
        comp = compare(inputs.load(c.model_ll), work / "variants")
    except UserError as e:
        return Outcome(seed, "refused", str(e).splitlines()[0])
    bad = [r.variant for r in comp.rows if r.status != "pass"]
    return Outcome(seed, "mismatch" if bad else "pass", ", ".join(bad))
