"""Build every variant of one model, run each on QEMU, and collect the comparison.

One directory per variant under the output directory (artifacts: see variants.py), plus
per-function profiles (profile.py) and the comparison itself as report.md / report.json.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from specializer import files, parallel, timing
from specializer.driver import callchoice
from specializer.driver.measured import Candidate, build_and_measure
from specializer.inputs import Model
from specializer.optimize import callsites, variants
from specializer.optimize.state import BuildContext
from specializer.report import macs, tables as report
from specializer.report.tables import Comparison


def unroll_thresholds(model: Model, v: str, options: variants.Options) -> tuple:
    """The unroll thresholds to build variant `v` with: several only for a specializing variant
    of a model that runs (the choice is by measurement)."""
    if v in variants.SPECIALIZING and options.unroll_candidates and model.manifest is not None:
        return tuple(options.unroll_candidates)
    return (options.specialize.unroll_threshold,)


def _keep(out_dir: Path, v: str, best: Path) -> None:
    """The chosen build becomes DIR/<v> (the row says which threshold); the others go once every
    variant has kept its own (compare)."""
    target = out_dir / v
    if Path(best) != target:
        if target.exists():
            shutil.rmtree(target)
        shutil.move(str(best), str(target))


CHOICE_ROUNDS = 3  # shape-only rebuilds of all-args at most (callchoice.py)


def _best(results: list[Candidate]) -> Candidate:
    """The passing build with the fewest est. cycles (the first such, in the order tried)."""
    return min(results, key=lambda c: (not c.passed, c.row.cycles or 0))


def _choose_calls(options: variants.Options, out_dir: Path, t, dims_costs: dict, dims_cycles: int,
                  tried: list[Candidate], run) -> list[Candidate]:
    """all-args at unroll threshold `t` (its builds so far: `tried`) with the calls dims ran faster
    at `t` shape-only (callchoice.py): the rebuilds, in the order made. A rebuild shifts what the
    size budget admits, so the calls are costed again in the rebuild, until no call is added (at
    most CHOICE_ROUNDS rebuilds); the comparison keeps the fastest of them all.
    `run(options, dir, note)` builds and runs one all-args build (build_and_measure)."""
    made: list[Candidate] = []

    def build(only: frozenset, n: int) -> Candidate:
        note = f" (unroll threshold {t or 'LLVM'}, {len(only)} calls shape-only: {', '.join(map(str, sorted(only)))})"
        c = run(options.but(unroll_threshold=t, shape_only=only),
                out_dir / ".unroll" / f"all-args-{t or 'llvm'}-shape-only-{n}", note)
        made.append(c)
        return c

    first = min(tried, key=lambda c: c.row.cycles or 0)
    only, best = frozenset(), first
    for n in range(1, CHOICE_ROUNDS + 1):
        more = only | callchoice.choose(dims_costs, callchoice.read(best.dir))
        if more == only:
            break
        only = more
        best = build(only, n)  # costed next even when not faster: what the added calls shifted is in it
        if not best.passed:
            return made
    # A function several calls share is charged to them by entries, which can misjudge calls of
    # different sizes; when all-args is still slower than dims, dims' rule at every call is the
    # last candidate (the table then lists every call as shape-only)
    every = frozenset(n for _, _, n in callsites.calls((first.dir / "linked.ll").read_text()) if n is not None)
    fastest = min((c.row.cycles or 0) for c in tried + made if c.passed)
    if every and every != only and fastest > dims_cycles:
        build(every, CHOICE_ROUNDS + 1)
    return made


def compare(model: Model, out_dir: Path, options: variants.Options = variants.Options(),
            which: tuple[str, ...] = variants.VARIANTS, method: str = "plugin",
            timeout: float = 120, progress=None, context: BuildContext | None = None,
            diff_text: bool = False, jobs: int | None = None, reuse: bool = False) -> Comparison:
    """`progress(text)`, when given, hears each step as it starts (the CLI prints it on stderr);
    `diff_text`: every .ll a build writes with its .diff.ll (variants.py); `jobs`: builds run at
    once (default: one per core; parallel.py) -- every variant at every unroll threshold and the
    per-call choice's rebuilds of each threshold (once its dims and all-args builds have ended),
    the longest first; the result is the same with any number of jobs; `reuse`: each build that an earlier run
    made from the same inputs is copied from the build directory (reuse.py)."""
    say = progress or (lambda text: None)
    context = context or BuildContext.default()
    jobs = parallel.default_jobs() if jobs is None else jobs
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def run(v: str, o: variants.Options, d: Path, note: str) -> Candidate:
        i = which.index(v) + 1
        return build_and_measure(model, v, d, o, context=context, method=method, timeout=timeout,
                                 say=lambda text: say(f"[{i}/{len(which)}] {v}: {text}"), note=note,
                                 diff_text=diff_text, reuse=reuse)

    def first_round(v: str, t, several: bool):
        d = out_dir / ".unroll" / f"{v}-{t or 'llvm'}" if several else out_dir / v
        return lambda: run(v, options.but(unroll_threshold=t), d, f" (unroll threshold {t or 'LLVM'})" if several else "")

    plan = [(v, t, len(tried) > 1) for v in which for tried in [unroll_thresholds(model, v, options)] for t in tried]
    run_all_args = lambda o, d, note: run(variants.ALL_ARGS, o, d, note)  # noqa: E731

    def chain(t, dims: Candidate, first: Candidate) -> list[Candidate]:
        """The per-call choice's rebuilds of all-args at threshold `t`, from that threshold's
        first dims and all-args builds."""
        if not (dims.passed and first.passed and (dims.dir / "profile.json").exists()):
            return []
        return _choose_calls(options, out_dir, t, callchoice.read(dims.dir), dims.row.cycles or 0, [first],
                             run_all_args)

    # The steps, longest first so that with -j N the short ones fill in beside them: per unroll
    # threshold (the highest first) all-args and dims, then the per-call choice's rebuilds, which
    # need those two and start as soon as both have ended; then the other variants. The results
    # keep the plan's order, so the outcome is the same for any N.
    steps: list = []
    at: dict[int, int] = {}  # plan index -> step index
    chain_at: dict = {}  # unroll threshold -> step index of its rebuilds
    where = {(v, t): i for i, (v, t, _) in enumerate(plan)}
    for t in sorted({t for v, t, _ in plan if v in variants.SPECIALIZING}, key=lambda t: -(t or 0)):
        for v in (variants.ALL_ARGS, variants.DIMS):
            if (v, t) in where:
                at[where[v, t]] = len(steps)
                steps.append(((), first_round(*plan[where[v, t]])))
        if (variants.DIMS, t) in where and (variants.ALL_ARGS, t) in where and not options.specialize.shape_only:
            chain_at[t] = len(steps)
            steps.append(((at[where[variants.DIMS, t]], at[where[variants.ALL_ARGS, t]]),
                          lambda dims, first, t=t: chain(t, dims, first)))
    for i in range(len(plan)):
        if i not in at:
            at[i] = len(steps)
            steps.append(((), first_round(*plan[i])))
    values = parallel.run_graph(steps, jobs)
    results: dict[str, list[Candidate]] = {v: [] for v in which}
    for i, (v, _, _) in enumerate(plan):
        results[v].append(values[at[i]])
    for c in list(results.get(variants.ALL_ARGS, [])):
        if c.unroll_threshold in chain_at:
            results[variants.ALL_ARGS].extend(values[chain_at[c.unroll_threshold]])
    rows = []
    for v in which:
        best = _best(results[v])
        if len(results[v]) > 1:
            _keep(out_dir, v, best.dir)
        rows.append(best.row)
    shutil.rmtree(out_dir / ".unroll", ignore_errors=True)
    opts = options.as_dict() | {"method": method, "shape_only": sorted(options.specialize.shape_only)}
    m = model.manifest
    checked = {} if m is None else {"reference": m.reference, "checked_inputs": m.checked_inputs,
                                    "tolerance": m.rtol_basis}
    c = Comparison(model.name, model.kind, tuple(rows), opts, macs.count(model.text) or None, **checked)
    with timing.phase("report"):
        files.write_all([(out_dir / "report.md", report.table(c) + "\n" + report.note(c.reference) + "\n"),
                         (out_dir / "report.json", report.json_text(c))])
    return c
