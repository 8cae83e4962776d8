"""`specialize diff` (two reports) and `specialize diff-ir` (two modules, function by function)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specializer.errors import UserError


DIFF_EPILOG = """\
BASE.json, NEW.json: reports as scripts/benchmark.py writes them (reports/variants.json) or as
'specialize --json' prints them. Every model and variant in both is compared: the change of
flash, RAM, instructions and est. cycles in percent ('=' unchanged, n/a where a report lacks
the metric). Models and variants only one report has are listed, not compared.

exit status: 0 no regression; 1 a regression: a metric over its --fail-on limit, or a variant
that passed in BASE and fails (or no longer builds) in NEW; 2 bad input (one line on stderr).
"""


def diff_main(argv: list[str]) -> int:
    from specializer.report import reportdiff

    p = argparse.ArgumentParser(prog="specialize diff", formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=DIFF_EPILOG,
                                description="Compare two comparison reports per model and variant; fail on "
                                            "a regression (for CI).")
    p.add_argument("base", metavar="BASE.json", help="the baseline report, e.g. the committed reports/variants.json")
    p.add_argument("new", metavar="NEW.json", help="the report to check")
    p.add_argument("--fail-on", metavar="LIST", default="", help=reportdiff.FAIL_ON_HELP)
    p.add_argument("--format", choices=["text", "md", "json"], default="text",
                   help="plain-text table (default), Markdown (a CI job summary) or JSON (every value)")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    a = p.parse_args(argv)
    thresholds = reportdiff.parse_fail_on(a.fail_on) if a.fail_on.strip() else ()
    d = reportdiff.compare_reports(reportdiff.load(Path(a.base)), reportdiff.load(Path(a.new)), thresholds)
    text = json.dumps(reportdiff.as_dict(d), indent=1, sort_keys=True) + "\n" if a.format == "json" \
        else reportdiff.render(d, a.format)
    if a.output:
        Path(a.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 1 if d.regressed else 0


DIFF_IR_EPILOG = """\
A, B: .ll files, or a variant's build directory (its optimized.ll, or --stage's). Both are
rendered as diff-oriented text (what a build writes as *.diff.ll: name order, stable value
names, attribute groups inlined, metadata named by content, big initializers summarized), and
types, globals and functions are paired by name: one line per added, removed or changed one,
then a unified diff of each changed one. A specialization.json next to a .ll labels the clones.
exit status: 0 (whatever changed); 2 bad input (one line on stderr).
"""


def diff_ir_main(argv: list[str]) -> int:
    from specializer.report import irdiff

    p = argparse.ArgumentParser(prog="specialize diff-ir", formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=DIFF_IR_EPILOG,
                                description="Show what changed between two LLVM modules, function by function.")
    p.add_argument("a", metavar="A", help="the old module: a .ll file or a build directory")
    p.add_argument("b", metavar="B", help="the new module: a .ll file or a build directory")
    p.add_argument("--stage", choices=irdiff.STAGES, default="optimized",
                   help="which module of a build directory (default optimized)")
    p.add_argument("-U", "--unified", type=int, default=3, metavar="N", help="lines of context (default 3)")
    p.add_argument("--names-only", action="store_true", help="list what changed, without the diffs")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    a = p.parse_args(argv)
    if a.unified < 0:
        p.error("-U must be >= 0")
    left, right = irdiff.load(Path(a.a), a.stage), irdiff.load(Path(a.b), a.stage)
    d = irdiff.compare_modules(left, right, a.a, a.b, a.unified)
    text = irdiff.render(d, a.names_only)
    if a.output:
        try:
            Path(a.output).write_text(text)
        except OSError as e:
            raise UserError(f"{a.output}: cannot write: {e.strerror}") from None
    else:
        sys.stdout.write(text)
    return 0
