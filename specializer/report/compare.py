"""Build every variant of one model, run each on QEMU, and collect the comparison.

One directory per variant under the output directory (artifacts: see variants.py), plus
per-function profiles (profile.py) and the comparison itself as report.md / report.json.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, replace
from pathlib import Path

from specializer import files

from specializer.run import firmware, measure, profile

from specializer.report import callchoice, macs, tables as report

from specializer.optimize import callsites, variants
from specializer.inputs import Model
from specializer.report.tables import Comparison, VariantRow


def _thresholds(model: Model, v: str, options: variants.Options) -> tuple:
    """The unroll thresholds to build variant `v` with: several only for a specializing variant
    of a model that runs (the choice is by measurement)."""
    if v in ("dims", "all-args") and options.unroll_candidates and model.manifest is not None:
        return tuple(options.unroll_candidates)
    return (options.unroll_threshold,)


def _row(model: Model, v: str, b, method: str, timeout: float, threshold, shape_only=frozenset()) -> VariantRow:
    spec = {}
    if b.specialized:
        spec = dict(clones=len(b.specialized.clones), refused=b.specialized.refused_by_budget,
                    unroll_threshold=threshold, shape_only=tuple(sorted(shape_only)))
    if model.manifest is None:
        fp = firmware.footprint(b.objects, sorted(model.keep, key=lambda k: (k not in model.entries, k)), b.dir)
        return VariantRow(v, "not run", fp.code, fp.const, fp.data, fp.bss, **spec,
                          lib_flash=fp.lib_flash, lib_ram=fp.lib_ram)
    m = measure.measure(list(b.objects), model.manifest, b.dir, method=method, timeout=timeout)
    if m.result.profile is not None:
        profile.write(profile.function_profile(m.firmware.elf, m.result.profile), b.dir)
    r = m.row
    return VariantRow(v, r.status, r.text, r.rodata, r.data, r.bss, r.insns,
                      r.cycles if method == "plugin" else None, r.max_abs_err, r.max_rel_err,
                      rtol=model.manifest.rtol, lib_flash=r.lib_flash, lib_ram=r.lib_ram, stack=r.stack, **spec)


def _keep(out_dir: Path, v: str, best: Path) -> None:
    """The chosen build becomes DIR/<v> (the row says which threshold); the others go."""
    target = out_dir / v
    if Path(best) != target:
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(best), str(target))
    shutil.rmtree(out_dir / ".unroll", ignore_errors=True)


CHOICE_ROUNDS = 3  # shape-only rebuilds of all-args at most (callchoice.py)


def _best(results: list) -> tuple:
    """The passing build with the fewest est. cycles (the first such, in the order tried)."""
    return min(results, key=lambda x: (x[2].status != "pass", x[2].cycles or 0))


def _build_run(model: Model, v: str, o: variants.Options, d: Path, note: str, say, method: str,
               timeout: float) -> tuple:
    """Variant `v` built with `o` into `d`, and run when the model runs: (threshold, build, row)."""
    say(f"building{note}")
    b = variants.build(model, v, d, o)
    if model.manifest is not None:
        say(f"running on QEMU{note}")
    only = o.shape_only if v == "all-args" else frozenset()
    return o.unroll_threshold, b, _row(model, v, b, method, timeout, o.unroll_threshold, only)


def _choose_calls(options: variants.Options, out_dir: Path, t, dims_costs: dict, dims_cycles: int,
                  results: list, run) -> None:
    """all-args at unroll threshold `t` (its build in `results`) with the calls dims ran faster at `t` shape-only
    (callchoice.py), each rebuild appended to `results`. A rebuild shifts what the size budget
    admits, so the calls are costed again in the rebuild, until no call is added (at most
    CHOICE_ROUNDS rebuilds); the comparison keeps the fastest of them all.
    `run(options, dir, note)` builds and runs one all-args build (_build_run)."""
    def build(only: frozenset, n: int) -> tuple:
        note = f" (unroll threshold {t or 'LLVM'}, {len(only)} calls shape-only: {', '.join(map(str, sorted(only)))})"
        r = run(replace(options, unroll_threshold=t, shape_only=only),
                out_dir / ".unroll" / f"all-args-{t or 'llvm'}-shape-only-{n}", note)
        results.append(r)
        return r

    first = min((r for r in results if r[0] == t), key=lambda r: r[2].cycles or 0)
    only, best = frozenset(), first
    for n in range(1, CHOICE_ROUNDS + 1):
        more = only | callchoice.choose(dims_costs, callchoice.read(best[1].dir))
        if more == only:
            break
        only = more
        best = build(only, n)  # costed next even when not faster: what the added calls shifted is in it
        if best[2].status != "pass":
            return
    # A function several calls share is charged to them by entries, which can misjudge calls of
    # different sizes; when all-args is still slower than dims, dims' rule at every call is the
    # last candidate (the table then lists every call as shape-only)
    every = frozenset(n for _, _, n in callsites.calls((first[1].dir / "linked.ll").read_text()) if n is not None)
    fastest = min((r[2].cycles or 0) for r in results if r[0] == t and r[2].status == "pass")
    if every and every != only and fastest > dims_cycles:
        build(every, CHOICE_ROUNDS + 1)


def compare(model: Model, out_dir: Path, options: variants.Options = variants.Options(),
            which: tuple[str, ...] = variants.VARIANTS, method: str = "plugin",
            timeout: float = 120, progress=None) -> Comparison:
    """`progress(text)`, when given, hears each step as it starts (the CLI prints it on stderr)."""
    say = progress or (lambda text: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    dims_costs: dict = {}  # unroll threshold -> the dims build's call costs (callchoice.py) and est. cycles
    for i, v in enumerate(which, 1):
        tried = _thresholds(model, v, options)
        results = []
        step = lambda text, i=i, v=v: say(f"[{i}/{len(which)}] {v}: {text}")  # noqa: E731
        run = lambda o, d, note, v=v: _build_run(model, v, o, d, note, step, method, timeout)  # noqa: E731
        for t in tried:
            d = out_dir / v if len(tried) == 1 else out_dir / ".unroll" / f"{v}-{t or 'llvm'}"
            t, b, row = run(replace(options, unroll_threshold=t), d,
                            f" (unroll threshold {t or 'LLVM'})" if len(tried) > 1 else "")
            results.append((t, b, row))
            if v == "dims" and row.status == "pass" and (b.dir / "profile.json").exists():
                dims_costs[t] = (callchoice.read(b.dir), row.cycles or 0)
        if v == "all-args" and not options.shape_only:
            for t, _, row in list(results):
                if t in dims_costs and row.status == "pass":
                    _choose_calls(options, out_dir, t, *dims_costs[t], results, run)
        t, b, row = _best(results)
        if len(results) > 1:
            _keep(out_dir, v, b.dir)
        rows.append(row)
    opts = asdict(options) | {"method": method, "shape_only": sorted(options.shape_only)}
    c = Comparison(model.name, model.kind, tuple(rows), opts, macs.count(model.text) or None)
    files.write_all([(out_dir / "report.md", report.table(c) + "\n" + report.NOTE + "\n"),
                     (out_dir / "report.json", report.json_text(c))])
    return c
