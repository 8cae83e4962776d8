#!/usr/bin/env python3
"""Benchmark: every bundled example, captured and built five ways, run and measured on QEMU.

    .venv/bin/python scripts/benchmark.py [NAME ...] [-o out/benchmark] [--reports reports]

For each model in specializer.driver.examples.EXAMPLES (whatever it holds when this runs): capture,
build the variants separate / lto / llvm-funcspec / dims / all-args, run each on QEMU (checked against JAX),
print its table; then a summary with the geometric means over the models of each variant's
flash, RAM and cycle ratios to `separate` and `lto`. Writes reports/variants.md and
reports/variants.json (no paths or times inside: CI diffs them) and the plots they link,
reports/plots/*.png (specializer/report/plots.py: byte-identical when the numbers are). Exit status 1
if any model fails to build or any variant's output does not match JAX.
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

from specializer.report import plots, tables as report

from specializer.optimize import variants
from specializer.capture.capture import capture
from specializer.driver.compare import compare
from specializer.errors import UserError
from specializer.driver.examples import EXAMPLES, example_path
from specializer.tools import repo_root


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help=f"models to run (default: all of {', '.join(EXAMPLES)})")
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
    a = p.parse_args(argv)
    names = a.names or list(EXAMPLES)
    unknown = [n for n in names if n not in EXAMPLES]
    if unknown:
        p.error(f"no example named '{unknown[0]}' (have: {', '.join(EXAMPLES)})")
    threshold, candidates = a.unroll_threshold
    options = variants.Options.of(max_growth=a.max_growth, unroll_threshold=threshold, unroll_candidates=candidates,
                                  rounds=a.rounds, pre_unroll=a.pre_unroll)
    out = Path(a.output)

    comparisons: list[report.Comparison] = []
    failed: dict[str, str] = {}
    for name in names:
        start = time.monotonic()
        try:
            c = capture(example_path(name), name, out / name)
            comp = compare(inputs.load(c.model_ll), out / name / "variants", options, variants.VARIANTS)
        except UserError as e:
            failed[name] = str(e)
            print(f"### {name}\n\nerror: {e}\n", flush=True)
            continue
        comparisons.append(comp)
        print(report.table(comp), flush=True)
        print(f"({name}: {time.monotonic() - start:.0f} s)\n", flush=True)

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
    bad = failed or [c.model for c in comparisons if not c.passed]
    return 1 if bad else 0


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
