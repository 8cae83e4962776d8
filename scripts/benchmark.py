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
(beside the checkout) holds them.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from specializer import inputs

from specializer.report import plots, published, tables as report

from specializer.optimize import variants
from specializer.capture import imported
from specializer.capture.capture import capture
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
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="a model's builds at once (default: one per core); the reports are the same for any N")
    p.add_argument("--no-cache", action="store_true",
                   help="build every variant again (default: reuse the builds an earlier run kept, when "
                        "nothing that determines them changed: specializer/driver/reuse.py)")
    a = p.parse_args(argv)
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

    comparisons: list[report.Comparison] = []
    failed: dict[str, str] = {}
    for name in names:
        comp = _run(name, lambda d: capture(example_path(name), name, d), out, options, failed, a)
        if comp is not None:
            comparisons.append(comp)
    from_files: list[report.Comparison] = []
    files_failed: dict[str, str] = {}
    arenas: dict[str, int] = {}
    for f in files:
        comp = _run(f.stem, lambda d: capture(f, None, d, examples=a.examples), out, options, files_failed, a)
        if comp is not None:
            from_files.append(comp)
            arena = imported.tflite_micro_arena(imported.read(f))
            if arena is not None:
                arenas[comp.model] = arena
    if files:
        _write_imported(Path(a.reports), from_files, files_failed, arenas, options)
    if not names:
        bad = files_failed or [c.model for c in from_files if not c.passed]
        return 1 if bad else 0

    summary_text, summary = report.summary(
        [_passing(c) for c in comparisons], variants.VARIANTS)
    print("### summary: geometric means over the models of the ratios to `separate` and `lto`, and of all-args to dims\n")
    print(summary_text)
    per_mac = report.per_mac_table([_passing(c) for c in comparisons], variants.VARIANTS)
    print("### est. cycles per multiply-accumulate (dot/conv kernels' MACs)\n")
    print(per_mac)
    print(report.NOTE)

    reports = Path(a.reports)
    reports.mkdir(parents=True, exist_ok=True)
    from specializer.library import libjit

    env = {"llvmlite": llvmlite.__version__, "llvm": ".".join(map(str, llvm.llvm_version_info)),
           "python": ".".join(platform.python_version_tuple()[:2]), "cmsis_nn": libjit.build().cmsis_nn}
    data = {"options": _options(options), "environment": env, "summary": summary,
            "models": [c.as_dict() for c in comparisons], "failed": failed}
    for stale in sorted((reports / "plots").glob("*.png")):  # the plots of this run only, as in variants.md
        stale.unlink()
    written = plots.write_all(data, _profiles(out, comparisons), reports / "plots", list(variants.VARIANTS))
    png = {p.name for p in written}
    print(f"libjit built with CMSIS-NN: {env['cmsis_nn']}")
    md = ["# Variants: separate, lto, llvm-funcspec, dims, all-args", "",
          "Every bundled example, captured, built five ways, run on QEMU `mps2-an386` (Cortex-M4F) "
          "and checked against JAX. Generated by `scripts/benchmark.py`.", "",
          f"Options: {json.dumps(_options(options), sort_keys=True)}; "
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
    bad = failed or files_failed or [c.model for c in comparisons + from_files if not c.passed]
    return 1 if bad else 0


def _run(name: str, captured, out: Path, options, failed: dict, a) -> report.Comparison | None:
    """Capture (`captured(dir)`), compare and print one model (`a`: the jobs and cache options);
    None (and `failed[name]`) on error."""
    start = time.monotonic()
    try:
        c = captured(out / name)
        comp = compare(inputs.load(c.model_ll), out / name / "variants", options, variants.VARIANTS,
                       jobs=a.jobs, reuse=not a.no_cache)
    except UserError as e:
        failed[name] = str(e)
        print(f"### {name}\n\nerror: {e}\n", flush=True)
        return None
    print(report.table(comp), flush=True)
    print(f"({name}: {time.monotonic() - start:.0f} s)\n", flush=True)
    return comp


def _write_imported(reports: Path, comparisons: list[report.Comparison], failed: dict, arenas: dict,
                    options: variants.Options) -> None:
    """reports/imported.md and .json: each model file's variants, checked against its format's
    interpreter, and the MLPerf Tiny models beside the published results."""
    beside, beside_data = published.beside_published([_passing(c) for c in comparisons], variants.VARIANTS, arenas)
    md = ["# Models from files: .tflite, checked against TFLite Micro", "",
          "Each file captured with TFLite Micro's interpreter as the oracle, built five ways and run on QEMU "
          "`mps2-an386`; every variant checked on every input against TFLite Micro's outputs (int8: bit for "
          "bit). Generated by `scripts/benchmark.py`.", "",
          f"Options: {json.dumps(_options(options), sort_keys=True)}.", "",
          report.note("TFLite Micro"), ""]
    if beside:
        md += ["## MLPerf Tiny beside the published Cortex-M4 results", "", beside, ""]
    for c in comparisons:
        arena = f"; TFLite Micro's arena on the host: {arenas[c.model]:,} bytes" if c.model in arenas else ""
        md += [report.table(c).replace("### ", "## ", 1).rstrip("\n"), "",
               f"RAM of the all-args build: {_ram(c, variants.ALL_ARGS)}{arena}.", ""]
    for name, err in failed.items():
        md += [f"## {name}", "", f"not measured: {err}", ""]
    data = {"options": _options(options), "models": [c.as_dict() for c in comparisons], "failed": failed,
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
