"""`specialize layers`: a captured model's cost per layer in every variant, its RAM beside TFLite Micro's."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from specializer.cli.args import progress_lines
from specializer.errors import UserError


def main(argv: list[str]) -> int:
    from specializer.optimize.variants import VARIANTS

    p = argparse.ArgumentParser(prog="specialize layers",
                                description="Per layer of a captured model whose layers capture knows (a .tflite "
                                "model, a model made by quantize(): layers.json): op, output shape, MACs, weight "
                                "and activation bytes, and est. cycles in each variant, built with line-table "
                                "debug info and profiled per call of the entry; then the build's RAM beside "
                                "TFLite Micro's arena for the same .tflite file.")
    p.add_argument("model", metavar="DIR/model.ll")
    p.add_argument("--variants", default=",".join(VARIANTS), metavar="LIST",
                   help=f"comma-separated variants to build and run (default: all: {','.join(VARIANTS)})")
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    p.add_argument("--timeout", type=float, default=120, help="seconds before a run counts as a hang")
    p.add_argument("--keep", metavar="DIR", help="keep the builds in DIR/<variant>")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    a = p.parse_args(argv)
    which = tuple(v.strip() for v in a.variants.split(",") if v.strip())
    bad = [v for v in which if v not in VARIANTS]
    if bad or not which:
        raise UserError(f"--variants {a.variants}: unknown variant '{bad[0] if bad else ''}' "
                        f"(have: {', '.join(VARIANTS)})")
    model = Path(a.model)
    if not model.is_file():
        raise UserError(f"{model}: no such file")
    from specializer.driver.layers import layer_profile
    from specializer.report import layer_table

    say = None if a.quiet or not sys.stderr.isatty() else progress_lines("layers")
    with tempfile.TemporaryDirectory(prefix="specializer-layers-") as tmp:
        report = layer_profile(model, Path(a.keep or tmp), which, timeout=a.timeout, progress=say)
    print(layer_table.as_json(report) if a.json else layer_table.table(report), end="")
    return 0 if all(v.row.status == "pass" for v in report.variants) else 1
