"""Differential testing: seeded random JAX programs, captured and run in every variant.

`program(seed)` writes the source of one program: a function of two float32 (or int32) arrays
`x`, `y` of one shape built from a small grammar: elementwise arithmetic and math, compares and
selects, casts, integer bit operations, reductions, reshapes, transposes, slices, dynamic
slices, gathers, concatenations, pads, dots (f32, and s8/u8 operands into s32 in several
dimension layouts), convolutions (strides, padding, dilation, feature groups), fori_loop,
while_loop with a known trip count, scan with a carry, cond. Values of the working shape feed
later statements; a value of another shape (a dot's, a convolution's) is an output.

`check(seeds, dir)` captures a batch of programs as ONE function (each program's inputs and
outputs its own, so every output is attributed to its program), runs every variant on QEMU and
compares each program's outputs with op-by-op JAX (`jax.disable_jit()`): XLA:CPU miscompiles
some in-place fusions, so jit is not the reference; a program whose jit and op-by-op results
differ is reported as `xla-differs` and not run. A batch that capture refuses or that fails to
build or run is split into single programs, so refusals and errors are per program too.
"""

from __future__ import annotations

import importlib.util
import random
import re
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specializer.capture import float64_run, tolerance
from specializer.errors import UserError

UNARY_F = ["jnp.exp(jnp.clip({a}, -8.0, 8.0))", "jnp.tanh({a})", "jnp.sin({a})", "jnp.cos({a})",
           "jnp.abs({a})", "jnp.sqrt(jnp.abs({a}) + 1.0)", "jnp.log(jnp.abs({a}) + 1.0)",
           "jax.nn.relu({a})", "jnp.negative({a})", "jnp.square({a})", "jnp.floor({a})",
           "jax.nn.sigmoid({a})", "jnp.arctan({a})", "jnp.log1p(jnp.abs({a}))",
           # casts through integers (clipped first: an out-of-range float -> int is undefined)
           "jnp.floor(jnp.clip({a}, -4.0, 4.0) * 8.0).astype(jnp.int32).astype(jnp.float32) * 0.125",
           "jnp.clip({a} * 20.0, -128.0, 127.0).astype(jnp.int8).astype(jnp.float32)",
           "jnp.clip({a} * 20.0, 0.0, 255.0).astype(jnp.uint8).astype(jnp.float32) * 0.1",
           "jnp.sign({a}) * jnp.round({a} * 2.0)", "jnp.where(jnp.isfinite({a}), {a}, 0.0)"]
UNARY_I = ["jnp.abs({a})", "jnp.negative({a})", "{a} * 3", "jnp.clip({a}, -5, 5)", "{a} // 3", "{a} % 7",
           "{a} >> 2", "{a} << 3", "lax.shift_right_logical({a}, 3)", "{a} & 0x5a", "{a} | 3", "{a} ^ -7",
           "~{a}", "jnp.sign({a})", "{a}.astype(jnp.int8).astype(jnp.int32)",
           "{a}.astype(jnp.uint8).astype(jnp.int32)",
           "({a}.astype(jnp.float32) * 0.37).astype(jnp.int32)",
           "jnp.where({a} % 2 == 0, {a} // 2, 3 * {a} + 1)"]
BINARY_F = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "jnp.maximum({a}, {b})", "jnp.minimum({a}, {b})",
            "{a} / (jnp.abs({b}) + 1.0)", "jnp.where({a} > {b}, {a}, {b} * 0.5)",
            "lax.select({a} <= {b}, {a} * {b}, {b} - {a})", "({a} == {b}).astype(jnp.float32) + {a}",
            "jnp.where(({a} > 0) & ({b} < 0.5), {a}, -{b})", "jnp.arctan2({a}, {b})"]
BINARY_I = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "jnp.maximum({a}, {b})", "jnp.minimum({a}, {b})",
            "jnp.where({a} > {b}, {a}, {b})", "lax.select({a} != {b}, {a} & {b}, {a} | {b})",
            "({a} >= {b}).astype(jnp.int32) * {a}", "{a} // (jnp.abs({b}) + 1)", "{a} % (jnp.abs({b}) + 1)"]
SHAPED = ["jnp.sum({a}, axis=0, keepdims=True) + {a}", "jnp.max({a}, axis=1, keepdims=True) - {a}",
          "jnp.transpose({a}).T", "jnp.flip({a}, axis=0)",
          "jnp.concatenate([{a}[:, :{h}], {a}[:, {h}:]], axis=1)",
          "jnp.pad({a}[1:, :], ((0, 1), (0, 0)))", "jnp.cumsum({a}, axis=1)",
          "jnp.reshape(jnp.reshape({a}, (-1,)), ({r}, {c}))",
          # transposes and strided slices that really move elements
          "jnp.reshape(jnp.transpose({a}), ({r}, {c}))",
          "jnp.reshape(jnp.transpose(jnp.reshape({a}, (2, {r2}, {c})), (1, 0, 2)), ({r}, {c}))",
          "jnp.concatenate([{a}[1::2], {a}[::2]], axis=0)",
          "jnp.concatenate([{a}[:, ::-1][:, :{h}], {a}[:, {h}:]], axis=1)",
          # dynamic slices and gathers: indices computed from the data
          "jnp.concatenate([lax.dynamic_slice({a}, (jnp.argmax({b}[:, 0]) % {r2}, 0), ({r2}, {c}))] * 2, axis=0)",
          "lax.dynamic_update_slice({a}, {b}[:2, :2], (jnp.argmin({b}[0]) % {r}, 1))",
          "{a}[jnp.abs({b}[:, 0].astype(jnp.int32)) % {r}]",
          "jnp.take({a}, jnp.abs({b}[0].astype(jnp.int32)) % {c}, axis=1)",
          "jnp.take_along_axis({a}, jnp.abs({b}.astype(jnp.int32)) % {c}, axis=1)"]
LOOP_F = ["lax.fori_loop(0, {n}, lambda i, v: v + {b} * 0.5, {a})",
          "lax.while_loop(lambda s: s[0] < {n}, lambda s: (s[0] + 1, jnp.tanh(s[1] * 0.9 + {b})), (0, {a}))[1]",
          "lax.scan(lambda h, row: (jnp.tanh(h * 0.5 + row), h + row), jnp.zeros(({c},), jnp.float32), {a})[1]",
          "lax.scan(lambda h, row: (h * 0.9 + row, jnp.sum(h) + row * h), {b}[0], {a})[1]",
          "lax.cond(jnp.sum({a}) > 0, lambda: {a} + {b}, lambda: {a} - {b})"]
LOOP_I = ["lax.fori_loop(0, {n}, lambda i, v: v + {b} * i, {a})",
          "lax.while_loop(lambda s: s[0] < {n}, lambda s: (s[0] + 1, (s[1] * 3 + {b}) % 1000), (0, {a}))[1]",
          "lax.scan(lambda h, row: (h + row, h * 2 - row), jnp.zeros(({c},), jnp.int32), {a})[1]",
          "lax.cond(jnp.sum({a}) > 0, lambda: {a} + {b}, lambda: {a} - {b})"]
# integer dots: operands narrowed to s8 / u8, products in s32, four dimension layouts
NARROW = {"s8": "jnp.clip({a}, -128, 127).astype(jnp.int8)", "u8": "jnp.clip({a}, 0, 255).astype(jnp.uint8)"}
NARROW_F = {"s8": "jnp.clip({a} * 20.0, -128.0, 127.0).astype(jnp.int8)",
            "u8": "jnp.clip(jnp.abs({a}) * 20.0, 0.0, 255.0).astype(jnp.uint8)"}
DOT_LAYOUTS = ["((1,), (1,)), ((), ())", "((0,), (0,)), ((), ())", "((1,), (0,)), ((), ())",
               "((2,), (2,)), ((0,), (0,))"]


@dataclass(frozen=True)
class Outcome:
    seed: int
    status: str  # pass | mismatch | refused | xla-differs | error
    detail: str = ""


# A step function (cast to an integer, floor, round) of a computed float is ill-conditioned:
# QEMU's libm and the host's differ by an ulp in tanh, exp, ..., and a value an ulp from a step
# lands on the other side (seed 361 before this rule: a tanh result cast to int8 changed an int32
# dot by 127). Steps apply to the inputs only, which both sides hold exactly.
_STEP = re.compile(r"astype\(jnp\.u?int|jnp\.floor|jnp\.round")


def _exact(value: str) -> str:
    return value if value in ("x", "y") else "x"


def _int_dot(rnd: random.Random, a: str, b: str, integer: bool, r: int, c: int) -> str:
    """An s8/u8 x s8/u8 -> s32 lax.dot_general of two working values (of the inputs in a float
    program: see _STEP), in one of DOT_LAYOUTS."""
    narrow = NARROW if integer else NARROW_F
    if not integer:
        a, b = _exact(a), _exact(b)
    ta, tb = rnd.choice(["s8", "s8", "u8"]), rnd.choice(["s8", "s8", "u8"])
    lhs, rhs = narrow[ta].format(a=a), narrow[tb].format(a=b)
    layout = rnd.choice(DOT_LAYOUTS)
    if layout == DOT_LAYOUTS[2]:  # (r, c) x (c, r): the right operand transposed first
        rhs = f"jnp.transpose({rhs})"
    elif layout == DOT_LAYOUTS[3]:  # batched over two halves of the rows
        lhs, rhs = f"jnp.reshape({lhs}, (2, {r // 2}, {c}))", f"jnp.reshape({rhs}, (2, {r // 2}, {c}))"
    return f"lax.dot_general({lhs}, {rhs}, ({layout}), preferred_element_type=jnp.int32)"


def _conv(rnd: random.Random, a: str, b: str, r: int, c: int) -> str:
    """An f32 lax.conv_general_dilated of a working value seen as NCHW with a kernel cut from another."""
    groups = rnd.choice([1, 1, 2])
    cin = rnd.choice([1, 2]) * groups
    cout = groups * rnd.choice([1, 2])
    kh, kw = rnd.choice([(1, 1), (2, 2), (3, 3), (1, 3), (3, 2)])
    if (r * c) % cin or r % cin:
        cin = groups = 1
        cout = rnd.choice([1, 2])
    h = r // cin
    strides = rnd.choice([(1, 1), (1, 1), (2, 1), (2, 2)])
    padding = rnd.choice(['"SAME"', '"VALID"', "((1, 0), (0, 1))", "((1, 1), (2, 1))"])
    rhs_dil = rnd.choice([(1, 1), (1, 1), (2, 1), (1, 2)])
    # input dilation: a transposed convolution (libjit_conv_transpose2d_f32)
    lhs_dil = (2, 1) if rnd.random() < 0.04 else (1, 1)
    if lhs_dil != (1, 1) and padding in ('"SAME"', '"VALID"'):
        padding = "((0, 0), (0, 0))"  # explicit padding: input dilation takes no SAME/VALID string
    pad_h = {'"SAME"': 0, '"VALID"': 0, "((1, 0), (0, 1))": 1, "((1, 1), (2, 1))": 2}.get(padding, 0)
    if (kh - 1) * rhs_dil[0] + 1 > (h - 1) * lhs_dil[0] + 1 + pad_h:
        kh, rhs_dil = 1, (1, rhs_dil[1])  # a kernel taller than the padded input has no output
    nk = cout * (cin // groups) * kh * kw
    kernel = f"jnp.reshape(jnp.tile(jnp.reshape({b}, (-1,)), {nk // (r * c) + 1})[:{nk}], " \
             f"({cout}, {cin // groups}, {kh}, {kw})) * 0.3"
    return (f"lax.conv_general_dilated(jnp.reshape({a}, (1, {cin}, {h}, {c})), {kernel}, {strides}, {padding}, "
            f"lhs_dilation={lhs_dil}, rhs_dilation={rhs_dil}, feature_group_count={groups})")


def _statements(rnd: random.Random, integer: bool, r: int, c: int) -> tuple[list[str], list[str], list[str]]:
    """(lines, working values, other-shaped outputs) of one program's body."""
    unary, binary = (UNARY_I, BINARY_I) if integer else (UNARY_F, BINARY_F)
    loops = LOOP_I if integer else LOOP_F
    vals, extra, lines = ["x", "y"], [], []
    fmt = dict(h=c // 2, r=r, c=c, r2=r // 2)
    for i in range(rnd.randint(3, 8)):
        kind = rnd.random()
        a, b = rnd.choice(vals), rnd.choice(vals)
        other = False
        if kind < 0.28:
            template = rnd.choice(unary)
            expr = template.format(a=a if integer or not _STEP.search(template) else _exact(a))
        elif kind < 0.52:
            expr = rnd.choice(binary).format(a=a, b=b)
        elif kind < 0.72:
            expr = rnd.choice(SHAPED).format(a=a, b=b, **fmt)
        elif kind < 0.82:
            expr = rnd.choice(loops).format(a=a, b=b, n=rnd.randint(1, 4), **fmt)
        elif kind < 0.87 and not integer:
            expr = f"jnp.tanh({a} @ jnp.transpose({b}) @ {a} * 0.05)"
        elif kind < 0.93:
            expr, other = _int_dot(rnd, a, b, integer, r, c), True
        elif not integer:
            expr, other = _conv(rnd, a, b, r, c), True
        else:
            expr = rnd.choice(binary).format(a=a, b=b)
        lines.append(f"    v{i} = {expr}")
        (extra if other else vals).append(f"v{i}")
    return lines, vals, extra


def program(seed: int, name: str = "f") -> str:
    """The source of program `seed` (deterministic): a function `name(x, y)` returning a tuple,
    with its example inputs in `name.example_inputs`."""
    rnd = random.Random(seed)
    integer = rnd.random() < 0.3
    r, c = rnd.choice([(4, 8), (8, 8), (6, 10), (16, 4)])
    lines, vals, extra = _statements(rnd, integer, r, c)
    outs = rnd.sample(vals[2:], k=min(2, len(vals) - 2)) + extra
    dtype = "np.int32" if integer else "np.float32"
    gen = ("rng.integers(-20, 20, size=({r}, {c}))" if integer else "rng.normal(size=({r}, {c}))").format(r=r, c=c)
    return "\n".join([
        f"def {name}(x, y):", *lines, f"    return ({', '.join(outs)},)", "", "",
        f"rng = np.random.default_rng({seed})",
        f"{name}.example_inputs = {{'x': {gen}.astype({dtype}), 'y': {gen}.astype({dtype})}}", ""])


HEADER = ["import jax", "import jax.numpy as jnp", "import numpy as np", "from jax import lax", "", ""]


def batch_source(seeds: list[int]) -> str:
    """One module: program s as `p<s>`, and `f` calling them all on its own inputs `x<s>`, `y<s>`,
    returning their outputs in seed order."""
    parts = [f'"""Random programs {", ".join(map(str, seeds))} (specializer.driver.fuzz)."""', *HEADER]
    for s in seeds:
        parts += [program(s, f"p{s}"), ""]
    params = ", ".join(f"x{s}, y{s}" for s in seeds)
    calls = " + ".join(f"p{s}(x{s}, y{s})" for s in seeds)
    inputs = ", ".join(f"'x{s}': p{s}.example_inputs['x'], 'y{s}': p{s}.example_inputs['y']" for s in seeds)
    parts += [f"def f({params}):", f"    return {calls}", "", "", f"f.example_inputs = {{{inputs}}}", ""]
    return "\n".join(parts)


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@dataclass(frozen=True)
class Reference:
    """One program's reference outputs (op-by-op JAX) and the tolerance its floats are judged by."""
    outputs: list
    rtol: float = tolerance.DEFAULT_RTOL


def reference(fn) -> tuple[Reference | None, str]:
    """(op-by-op JAX outputs and the program's tolerance, '') for one program, or (None, why) when
    jit disagrees with them. The tolerance is what float32 costs this program (tolerance.py)."""
    import jax

    args = list(fn.example_inputs.values())
    with jax.disable_jit():
        eager = [np.asarray(v) for v in fn(*args)]
    jitted = [np.asarray(v) for v in jax.jit(fn)(*args)]
    for a, b in zip(jitted, eager):
        if a.dtype.kind in "iu":
            if not np.array_equal(a, b):
                return None, "jit and op-by-op JAX differ (integer)"
        elif not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
            return None, "jit and op-by-op JAX differ"
    try:
        wide = float64_run.run(fn, args)
    except Exception:  # noqa: BLE001 - no float64 run (float64_run.Unsupported, a primitive's refusal)
        wide = None
    return Reference(eager, tolerance.derive(eager, wide, _atol(eager))[0]), ""


def _atol(ref: list[np.ndarray]) -> float:
    """A tenth of the program's largest finite float magnitude (capture's floor; at least 1e-6)."""
    floats = [np.abs(r[np.isfinite(r)]).max() for r in ref if r.dtype.kind == "f" and np.isfinite(r).any()]
    return max([1e-6] + [float(np.float32(m * 0.1)) for m in floats])


def matches(got: list[np.ndarray], ref: list[np.ndarray], rtol: float = 1e-5) -> bool:
    """The harness's rule (measure.errors) for one program's outputs: integers exactly; floats
    NaN/inf in place, finite values within rtol of max(|ref|, a tenth of the program's largest
    finite float magnitude)."""
    atol = _atol(ref)
    for g, r in zip(got, ref):
        if g.shape != r.shape:
            return False
        if r.dtype.kind != "f":
            if not np.array_equal(g, r):
                return False
            continue
        g64, r64 = g.astype(np.float64), r.astype(np.float64)
        special = ~np.isfinite(r64)
        same = np.where(np.isnan(r64), np.isnan(g64), g64 == r64)
        if not np.all(same[special]):
            return False
        fin = ~special
        with np.errstate(invalid="ignore"):
            if not np.all(np.abs(g64[fin] - r64[fin]) <= rtol * np.maximum(np.abs(r64[fin]), atol)):
                return False
    return True


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _capture(seeds: list[int], work: Path):
    from specializer import inputs
    from specializer.capture.capture import capture

    work.mkdir(parents=True, exist_ok=True)
    src = work / "progs.py"
    src.write_text(batch_source(seeds))
    return inputs.load(capture(src, "f", work / "capture", timeout=300).model_ll)


def _refused(e: UserError) -> bool:
    """Capture's refusals by name (an op it cannot lower, or the user's program failing)."""
    text = str(e)
    return text.startswith("unsupported op") or text.startswith("capture of") and " failed: " in text


def run_variants(seeds: list[int], refs: dict[int, Reference], model, work: Path,
                 options) -> dict[int, Outcome]:
    """Every variant of the captured batch on QEMU; per program: pass, or mismatch naming the
    variants whose outputs for it differ from op-by-op JAX. Raises what a build or run raises."""
    from specializer.driver.measured import build_and_measure
    from specializer.optimize import variants
    from specializer.optimize.state import BuildContext
    from specializer.run import measure

    context = BuildContext.default()
    spans, k = {}, 0
    for s in seeds:
        spans[s] = (k, k + len(refs[s].outputs))
        k += len(refs[s].outputs)
    if k != len(model.manifest.outputs):
        raise UserError(f"capture wrote {len(model.manifest.outputs)} outputs for {k} program outputs")
    bad: dict[int, list[str]] = {s: [] for s in seeds}
    for v in variants.VARIANTS:
        c = build_and_measure(model, v, work / "variants" / v, options, context=context, timeout=120,
                              function_profile=False)
        got = measure.read_outputs(c.measured.result.stdout, model.manifest)
        for s in seeds:
            lo, hi = spans[s]
            if not matches(got[lo:hi], refs[s].outputs, refs[s].rtol):
                bad[s].append(v)
    return {s: Outcome(s, "mismatch" if bad[s] else "pass", _detail(bad[s], refs[s].rtol)) for s in seeds}


def _detail(bad: list[str], rtol: float) -> str:
    """The variants that differ; and a tolerance other than the default, which the log keeps."""
    wider = f"tolerance {rtol:g}" if rtol != tolerance.DEFAULT_RTOL else ""
    return "; ".join(x for x in (", ".join(bad), wider) if x)


def check(seeds: list[int] | int, work: Path, unroll_threshold: int | None = None) -> dict[int, Outcome]:
    """Every program of `seeds` captured and run in every variant (unroll threshold as given:
    LLVM's by default) against op-by-op JAX. A batch capture refuses is split (capture only)
    until each refusal is one program's; a batch that fails to build or run is split and run
    again down to single programs."""
    from specializer.optimize.variants import Options

    seeds = [seeds] if isinstance(seeds, int) else list(seeds)
    options = Options.of(unroll_threshold=unroll_threshold, unroll_candidates=())
    work.mkdir(parents=True, exist_ok=True)
    out: dict[int, Outcome] = {}
    refs = {}
    for s in seeds:
        src = work / f"prog{s}.py"
        src.write_text("\n".join([*HEADER, program(s)]))
        try:
            ref, why = reference(_load(src).f)
        except Exception as e:  # noqa: BLE001 - the generator wrote a program JAX rejects: its bug
            out[s] = Outcome(s, "error", f"JAX rejects the program: {type(e).__name__}: {_first_line(e)}")
            continue
        if ref is None:
            out[s] = Outcome(s, "xla-differs", why)
        else:
            refs[s] = ref
    todo = [s for s in seeds if s in refs]
    while todo:
        model, refused = _capture_some(todo, work)
        out.update(refused)
        todo = [s for s in todo if s not in refused]
        if model is None and not refused:  # fails as a batch, not alone: run them one by one
            for s in todo:
                model, refused = _capture_some([s], work)
                out.update(refused or _run([s], refs, model, work, options))
            break
        if model is None:
            continue  # the refused are out: capture the rest again
        out.update(_run(todo, refs, model, work, options))
        break
    return {s: out[s] for s in seeds}


def _name(seeds: list[int]) -> str:
    return f"b{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"s{seeds[0]}"


def _error(seed: int, e: BaseException) -> Outcome:
    if isinstance(e, UserError):
        return Outcome(seed, "refused" if _refused(e) else "error", _first_line(e))
    tb = traceback.extract_tb(sys.exc_info()[2])[-1]
    return Outcome(seed, "error", f"{type(e).__name__} at {Path(tb.filename).name}:{tb.lineno}: {_first_line(e)}")


def _capture_some(seeds: list[int], work: Path):
    """(the batch captured, {}) or, when capture fails, (None, {seed: outcome}) for the programs
    that fail alone, found by halving (the rest are captured again by the caller)."""
    try:
        return _capture(seeds, work / _name(seeds)), {}
    except Exception as e:  # noqa: BLE001 - recorded per program below
        if len(seeds) == 1:
            return None, {seeds[0]: _error(seeds[0], e)}
    half = len(seeds) // 2
    failed = {}
    for part in (seeds[:half], seeds[half:]):
        model, f = _capture_some(part, work)
        failed.update(f)
    return None, failed


def _run(seeds: list[int], refs, model, work: Path, options) -> dict[int, Outcome]:
    try:
        return run_variants(seeds, refs, model, work / _name(seeds), options)
    except Exception as e:  # noqa: BLE001 - a failure of the tool is a finding, recorded per program
        if len(seeds) == 1:
            return {seeds[0]: _error(seeds[0], e)}
    half = len(seeds) // 2
    out = {}
    for part in (seeds[:half], seeds[half:]):
        try:
            m = _capture(part, work / _name(part))
        except Exception as e:  # noqa: BLE001
            out.update({s: _error(s, e) for s in part})
            continue
        out.update(_run(part, refs, m, work, options))
    return out
