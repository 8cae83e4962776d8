#!/usr/bin/env python3
"""Benchmark: every bundled example, captured and built five ways, run and measured on QEMU.

    .venv/bin/python scripts/benchmark.py [NAME | FILE.tflite ...] [-o out/benchmark] [--reports reports]

For each model in specializer.driver.examples.EXAMPLES (whatever it holds when this runs): capture,
build the variants separate / lto / llvm-funcspec / dims / all-args, run each on QEMU (checked against JAX),
print its table; then a summary with the geometric means over the models of each variant's
flash, RAM and cycle ratios to `separate` and `lto`. Writes reports/variants.md and
reports/variants.json (no paths or times inside: CI diffs them) and the plots they link,
reports/plots/*.png (specializer/report/plots.py: byte-identical when the numbers are). Exit status 1
if any model fails to build or any variant's output does not match JAX.

Model files (.tflite) are captured with TFLite Micro as the oracle on --examples inputs and
reported apart, in reports/imported.md and .json: the MLPerf Tiny reference models beside the
published Cortex-M4 results (specializer/report/published.py), RAM beside TFLite Micro's arena.
Without NAMEs: every example, and the MLPerf Tiny int8 models when ../shared/models/mlperf_tiny
(beside the checkout) holds them. The reports list the models in one order (EXAMPLES', then the
files') however they were given.

CI's job matrix: `--shard K/N` runs every N-th model from the K-th and writes its results as
DIR/shard-K-of-N.json; `--merge SHARD.json ...` writes the reports from them (byte for byte
what one run over every model writes). `-j N` builds a model's variants side by side; unchanged
builds an earlier run kept are reused, and so is a model's capture in -o's directory when nothing
that determines it changed (specializer/capture/again.py; `--no-cache`: capture and build everything).
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from specializer import inputs

from specializer.report import plots, published, tables as report

from specializer.optimize import variants
from specializer.capture import imported
from specializer.capture.again import capture_again
from specializer.cli.args import add_speed_options
from specializer.driver import campaign
from specializer.driver.compare import compare
from specializer.errors import UserError
from specializer.driver.examples import EXAMPLES, example_path
from specializer.tools import repo_root

MLPERF = repo_root().parent / "shared" / "models" / "mlperf_tiny"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help=f"models to run: examples by name, or .tflite files (default: all "
                   f"of {', '.join(EXAMPLES)}, and the MLPerf Tiny int8 models when {MLPERF} exists)")
    p.add_argument("--examples", type=int, default=20, metavar="N",
                   help="a model file's inputs checked in every variant (the first measured; default 20)")
    p.add_argument("-o", "--output", default=str(repo_root() / "out" / "benchmark"), metavar="DIR",
                   help="captures and builds go to DIR/<model>/ (default out/benchmark)")
    p.add_argument("--reports", default=str(repo_root() / "reports"), metavar="DIR",
                   help="where variants.md and variants.json are written (default reports/)")
    p.add_argument("--max-growth", type=lambda s: None if s == "none" else float(s),
                   default=variants.DEFAULT_MAX_GROWTH)
    p.add_argument("--unroll-threshold", type=variants.unroll_setting, default="auto",
                   help="N, 'llvm' (LLVM's default) or 'auto' (measure each of variants.DEFAULT_UNROLL_CANDIDATES "
                        "and keep the fastest; the default)")
    p.add_argument("--rounds", type=int, default=variants.DEFAULT_ROUNDS)
    p.add_argument("--pre-unroll", action="store_true")
    add_speed_options(p)
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="spread the models over this Dask cluster's workers (sharing -o's and the build directory's "
                        "file system); the same reports")
    p.add_argument("--shard", type=_shard, metavar="K/N",
                   help="run only the K-th of N shares of the models (CI's job matrix) and write the results as "
                        "DIR/shard-K-of-N.json (--reports DIR) for --merge, no reports")
    p.add_argument("--merge", nargs="+", metavar="SHARD.json",
                   help="write the reports from the shards' results (no model is built): the same files as one "
                        "run over every model")
    a = p.parse_args(argv)
    if a.merge:
        if a.names or a.shard:
            p.error("--merge takes the shards' files only (no model names, no --shard)")
        try:
            results = _merged([Path(f) for f in a.merge])
        except (OSError, ValueError, KeyError) as e:
            print(f"benchmark.py: error: --merge: {e}", file=sys.stderr)
            return 2
        return _write_reports(Path(a.reports), results)
    names = a.names or list(EXAMPLES)
    files = [Path(n) for n in names if imported.is_model_file(Path(n))]
    names = [n for n in names if not imported.is_model_file(Path(n))]
    unknown = [n for n in names if n not in EXAMPLES]
    if unknown:
        p.error(f"no example named '{unknown[0]}' (have: {', '.join(EXAMPLES)})")
    if not a.names:
        if MLPERF.is_dir():
            files = [MLPERF / f for f in published.FILES if (MLPERF / f).is_file()]
        else:
            print(f"skipped the MLPerf Tiny models: {MLPERF} is absent", flush=True)
    threshold, candidates = a.unroll_threshold
    options = variants.Options.of(max_growth=a.max_growth, unroll_threshold=threshold, unroll_candidates=candidates,
                                  rounds=a.rounds, pre_unroll=a.pre_unroll)
    out = Path(a.output)
    # the reports list the models in one order however they were given or sharded (_merged)
    names, files = sorted(names, key=_rank), sorted(files, key=lambda f: _rank(f.stem))
    if a.shard:  # every N-th model of the whole list (examples, then files), from the K-th
        k, n = a.shard
        mine = set(([*names, *map(str, files)])[k - 1::n])
        names, files = [x for x in names if x in mine], [f for f in files if str(f) in mine]

    from specializer.library import libjit

    env = {"llvmlite": llvmlite.__version__, "llvm": ".".join(map(str, llvm.llvm_version_info)),
           "python": ".".join(platform.python_version_tuple()[:2]), "cmsis_nn": libjit.build().cmsis_nn}
    results = Results(_options(options), env, examples_run=bool(names), files_run=bool(files))
    specs = [("example", n) for n in names] + [("file", str(f)) for f in files]
    task = functools.partial(_model, out=str(out), options=options, examples=a.examples, jobs=a.jobs,
                             reuse=not a.no_cache)
    done: dict[int, dict] = {}
    # on a Dask cluster the models spread over its workers; here one after another, each model's
    # capture beside the previous model's builds
    done_first = (campaign.run(task, specs, scheduler=a.scheduler) if a.scheduler else campaign.pipelined(
        functools.partial(_captured, out=str(out), examples=a.examples, reuse=not a.no_cache),
        functools.partial(_compared, out=str(out), options=options, jobs=a.jobs, reuse=not a.no_cache), specs))
    try:
        for i, r in done_first:
            print(r["text"], flush=True)
            done[i] = r
    except UserError as e:
        print(f"benchmark.py: error: {e}", file=sys.stderr)
        return 2
    for i in sorted(done):  # the reports' order, whatever order the models finished in
        r = done[i]
        if r["kind"] == "example":
            (results.comparisons.append(r["comparison"]) if r["comparison"] else
             results.failed.__setitem__(r["name"], r["error"]))
        else:
            (results.from_files.append(r["comparison"]) if r["comparison"] else
             results.files_failed.__setitem__(r["name"], r["error"]))
            if r["arena"] is not None:
                results.arenas[r["name"]] = r["arena"]
        results.profiles |= r["profiles"]
    if a.shard:
        reports = Path(a.reports)
        reports.mkdir(parents=True, exist_ok=True)
        shard = reports / f"shard-{a.shard[0]}-of-{a.shard[1]}.json"
        shard.write_text(json.dumps(results.as_dict(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {shard}", flush=True)
        return 1 if results.bad() else 0
    return _write_reports(Path(a.reports), results)


def _shard(text: str) -> tuple[int, int]:
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"not a shard: '{text}' (K/N with 1 <= K <= N, e.g. 2/4)")
    return int(k), int(n)


@dataclass
class Results:
    """What the models' runs gave: the reports are written from it alone (a shard writes it as JSON)."""
    options: dict
    environment: dict
    examples_run: bool = False  # variants.md is written when examples ran, imported.md when files did
    files_run: bool = False
    comparisons: list = field(default_factory=list)  # the examples'
    failed: dict = field(default_factory=dict)
    from_files: list = field(default_factory=list)  # the model files'
    files_failed: dict = field(default_factory=dict)
    arenas: dict = field(default_factory=dict)  # model file -> TFLite Micro's arena bytes
    profiles: dict = field(default_factory=dict)  # model -> variant -> profile.json rows (the plots)

    def bad(self) -> bool:
        return bool(self.failed or self.files_failed
                    or [c.model for c in self.comparisons + self.from_files if not c.passed])

    def as_dict(self) -> dict:
        return {"options": self.options, "environment": self.environment, "examples_run": self.examples_run, "files_run": self.files_run,
                "comparisons": [c.as_dict() for c in self.comparisons], "failed": self.failed,
                "from_files": [c.as_dict() for c in self.from_files], "files_failed": self.files_failed,
                "arenas": self.arenas, "profiles": self.profiles}


def _rank(name: str) -> tuple:
    """A model's place in the reports: EXAMPLES' order, the MLPerf Tiny files in published.FILES'
    order, then any other file by name."""
    known = [*EXAMPLES, *(Path(f).stem for f in published.FILES)]
    return (known.index(name), "") if name in known else (len(known), name)


def _merged(paths: list[Path]) -> Results:
    """The shards' results as one run's: the same options and environment, models in the full order
    (EXAMPLES, then the MLPerf Tiny files in published.FILES' order, then any others by name)."""
    shards = [json.loads(p.read_text()) for p in paths]
    first = shards[0]
    for p, d in zip(paths, shards):
        for k in ("options", "environment"):
            if d[k] != first[k]:
                raise ValueError(f"{p.name}: its {k} differ from {paths[0].name}'s: shards of different runs")
    key = _rank
    r = Results(first["options"], first["environment"], examples_run=any(d["examples_run"] for d in shards), files_run=any(d["files_run"] for d in shards))
    for d in shards:
        r.comparisons += map(report.Comparison.from_dict, d["comparisons"])
        r.from_files += map(report.Comparison.from_dict, d["from_files"])
        r.failed |= d["failed"]
        r.files_failed |= d["files_failed"]
        r.arenas |= d["arenas"]
        r.profiles |= d["profiles"]
    r.comparisons.sort(key=lambda c: key(c.model))
    r.from_files.sort(key=lambda c: key(c.model))
    r.failed = {n: r.failed[n] for n in sorted(r.failed, key=key)}
    r.files_failed = {n: r.files_failed[n] for n in sorted(r.files_failed, key=key)}
    return r


def _write_reports(reports: Path, r: Results) -> int:
    """variants.md/.json and the plots (when examples ran), imported.md/.json (when files did)."""
    if r.files_run:
        _write_imported(reports, r.from_files, r.files_failed, r.arenas, r.options)
    if not r.examples_run:
        return 1 if r.bad() else 0
    comparisons, failed = r.comparisons, r.failed
    summary_text, summary = report.summary(
        [_passing(c) for c in comparisons], variants.VARIANTS)
    print("### summary: geometric means over the models of the ratios to `separate` and `lto`, and of all-args to dims\n")
    print(summary_text)
    per_mac = report.per_mac_table([_passing(c) for c in comparisons], variants.VARIANTS)
    print("### est. cycles per multiply-accumulate (dot/conv kernels' MACs)\n")
    print(per_mac)
    print(report.NOTE)

    reports.mkdir(parents=True, exist_ok=True)
    env = r.environment
    data = {"options": r.options, "environment": env, "summary": summary,
            "models": [c.as_dict() for c in comparisons], "failed": failed}
    for stale in sorted((reports / "plots").glob("*.png")):  # the plots of this run only, as in variants.md
        stale.unlink()
    written = plots.write_all(data, r.profiles, reports / "plots", list(variants.VARIANTS))
    png = {p.name for p in written}
    print(f"libjit built with CMSIS-NN: {env['cmsis_nn']}")
    md = ["# Variants: separate, lto, llvm-funcspec, dims, all-args", "",
          "Every bundled example, captured, built five ways, run on QEMU `mps2-an386` (Cortex-M4F) "
          "and checked against JAX. Generated by `scripts/benchmark.py`.", "",
          f"Options: {json.dumps(r.options, sort_keys=True)}; "
          f"llvmlite {env['llvmlite']} (LLVM {env['llvm']}); libjit built with CMSIS-NN: {env['cmsis_nn']}.", "",
          report.NOTE, "",
          "## Summary: geometric means over the models of the ratios to `separate` and `lto`, and of all-args to dims", "",
          "Only variants that passed are included.", "", summary_text,
          "![flash, RAM and est. cycles of every variant against lto, geometric means](plots/summary.png)", "",
          "## est. cycles per multiply-accumulate", "",
          "MACs: what the model's dot and convolution kernels compute (`specializer/report/macs.py`).", "",
          per_mac]
    for c in comparisons:
        md.append(report.table(c).replace("### ", "## ", 1))
        md += [f"![{c.model}: flash and est. cycles per variant](plots/{c.model}.png)", ""]
        if f"{c.model}-profile.png" in png:
            md += [f"![{c.model}: est. cycles per function and variant](plots/{c.model}-profile.png)", ""]
    for name, err in failed.items():
        md += [f"## {name}", "", f"not measured: {err}", ""]
    (reports / "variants.md").write_text("\n".join(md).rstrip("\n") + "\n")
    (reports / "variants.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"\nwrote {reports / 'variants.md'}, {reports / 'variants.json'} and {len(written)} plots in "
          f"{reports / 'plots'}")
    return 1 if r.bad() else 0


def _model(spec: tuple[str, str], out: str, options, examples: int, jobs: int | None, reuse: bool) -> dict:
    """One model captured and compared (a campaign's task on a cluster's worker): its comparison
    or error, the text to print, TFLite Micro's arena (a model file) and its profiles."""
    try:
        got = _captured(spec, out, examples, reuse)
    except UserError as e:  # the model's error, as pipelined() hands it on: the other models go on
        got = e
    return _compared(spec, got, out, options, jobs, reuse)


def _captured(spec: tuple[str, str], out: str, examples: int, reuse: bool) -> dict:
    """A model's capture (raises UserError), its seconds and TFLite Micro's arena of a model file."""
    kind, what = spec
    start = time.monotonic()
    if kind == "example":
        c, arena = capture_again(example_path(what), what, Path(out) / what, reuse=reuse), None
    else:
        c = capture_again(Path(what), None, Path(out) / Path(what).stem, examples=examples, reuse=reuse)
        arena = imported.tflite_micro_arena(imported.read(Path(what)))
    return {"capture": c, "arena": arena, "seconds": time.monotonic() - start}


def _compared(spec: tuple[str, str], got: dict | UserError, out: str, options, jobs: int | None, reuse: bool) -> dict:
    """The model's comparison from its capture (or the capture's error)."""
    kind, what = spec
    name = what if kind == "example" else Path(what).stem
    r = {"kind": kind, "name": name, "comparison": None, "error": None, "arena": None, "profiles": {}}
    start = time.monotonic()
    try:
        if isinstance(got, UserError):
            raise got
        c, r["arena"] = got["capture"], got["arena"]
        comp = compare(inputs.load(c.model_ll), Path(out) / name / "variants", options, variants.VARIANTS,
                       jobs=jobs, reuse=reuse)
    except UserError as e:
        return r | {"error": str(e), "text": f"### {name}\n\nerror: {e}\n"}
    # apart: the capture ran beside the previous model's builds
    took = f"capture {got['seconds']:.0f} s, builds {time.monotonic() - start:.0f} s"
    return r | {"comparison": comp, "profiles": _profiles(Path(out), [comp]) if kind == "example" else {},
                "text": f"{report.table(comp)}\n({name}: {took})\n"}


def _write_imported(reports: Path, comparisons: list[report.Comparison], failed: dict, arenas: dict,
                    options: dict) -> None:
    """reports/imported.md and .json: each model file's variants, checked against its format's
    interpreter, and the MLPerf Tiny models beside the published results."""
    beside, beside_data = published.beside_published([_passing(c) for c in comparisons], variants.VARIANTS, arenas)
    md = ["# Models from files: .tflite, checked against TFLite Micro", "",
          "Each file captured with TFLite Micro's interpreter as the oracle, built five ways and run on QEMU "
          "`mps2-an386`; every variant checked on every input against TFLite Micro's outputs (int8: bit for "
          "bit). Generated by `scripts/benchmark.py`.", "",
          f"Options: {json.dumps(options, sort_keys=True)}.", "",
          report.note("TFLite Micro"), ""]
    if beside:
        md += ["## MLPerf Tiny beside the published Cortex-M4 results", "", beside, ""]
    for c in comparisons:
        arena = f"; TFLite Micro's arena on the host: {arenas[c.model]:,} bytes" if c.model in arenas else ""
        md += [report.table(c).replace("### ", "## ", 1).rstrip("\n"), "",
               f"RAM of the all-args build: {_ram(c, variants.ALL_ARGS)}{arena}.", ""]
    for name, err in failed.items():
        md += [f"## {name}", "", f"not measured: {err}", ""]
    data = {"options": options, "models": [c.as_dict() for c in comparisons], "failed": failed,
            "tflite_micro_arena": arenas, "published": beside_data}
    reports.mkdir(parents=True, exist_ok=True)
    (reports / "imported.md").write_text("\n".join(md).rstrip("\n") + "\n")
    (reports / "imported.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {reports / 'imported.md'} and {reports / 'imported.json'}", flush=True)


def _ram(c: report.Comparison, variant: str) -> str:
    r = c.row(variant)
    return "-" if r is None or r.ram is None else f"{r.ram:,} bytes"


def _profiles(out: Path, comparisons: list[report.Comparison]) -> dict:
    """model -> variant -> the rows of its profile.json (compare() writes one per variant run)."""
    found: dict = {}
    for c in comparisons:
        for r in c.rows:
            f = out / c.model / "variants" / r.variant / "profile.json"
            if f.is_file():
                found.setdefault(c.model, {})[r.variant] = json.loads(f.read_text())
    return found


def _options(o: variants.Options) -> dict:
    d = o.as_dict()
    return {k: list(v) if k == "unroll_candidates" else v for k, v in d.items() if k != "shape_only"}


def _passing(c: report.Comparison) -> report.Comparison:
    """The comparison without failed rows (a wrong answer has no meaningful size or speed)."""
    base = c.row(report.BASELINE)
    if base is None or base.status != "pass":
        return report.Comparison(c.model, c.kind, (), c.options, c.macs)
    return report.Comparison(c.model, c.kind, tuple(r for r in c.rows if r.status == "pass"), c.options, c.macs)


if __name__ == "__main__":
    sys.exit(main())
