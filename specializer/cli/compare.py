"""`specialize [--all-args] FILE.ll`: build the variants, run each on QEMU, print the comparison
(or one variant's module: -S, --emit; or the pipelines: --print-pipeline)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specializer.cli.args import (add_speed_options, byte_count, calls, check_output_dir, growth, progress_lines,
                                  unroll_threshold)
from specializer.errors import UserError


SPECIALIZE_EPILOG = """\
variants:
  separate       model and kernel library compiled apart at O2, linked by the linker
  lto            one module (model + kernels), internalized, O2
  llvm-funcspec  lto with LLVM's FunctionSpecialization forced on in IPSCCP (-force-specialization,
                 literal constants and global addresses allowed, 16 clones per function): the peer
  dims           Glow's default: lto + a clone per call site for its constant scalar arguments
                 and its pointers to constant non-tensor data (a constant global that is no model
                 tensor and holds no addresses, floats or bytes; a stack struct written only with
                 such constants before the call); never buffer addresses, never weights
  all-args       lto + a clone per call site for every constant argument: buffer addresses,
                 weights, XLA call frames, and pointers to stack objects that hold only constants
                 (CMSIS instance structs), which become private constant globals; except the
                 calls a comparison measured faster as dims' shape-only clones (--shape-only)
  dims and all-args run in rounds (constant propagation between them) until no new clone, then O2.
  A stack object counts as constant at a call when the callee only reads it (readonly), every
  store to it is a constant, in the call's block and before the call, and nothing else uses it.

per-call choice (all-args, in a comparison): every model call is numbered ('call N' in the
log); after dims and all-args run, each call is costed in both from the per-function profiles and
the calls dims ran faster are rebuilt shape-only (dims' rule, no relayout), costed again, up to 3
rounds; if all-args is still slower than dims, dims' rule at every call is the last candidate. The
fastest measured build is kept; the table lists its shape-only calls.

size budget (--max-growth X): the clones and their callees are optimized in a scratch copy of
the module (clones kept out of line, callees unspecialized). A callee's size counts every
function it calls; a clone adds its own code and what only it calls. All clones of one callee
together may add at most X times the callee's size. Clones are admitted in the order of their
first call site; one that would exceed its callee's budget is refused, its call sites keep
calling the original, and the log says so. 'none' turns the budget off.
flash budget (--flash-budget BYTES): the same scratch build, unrolled as O2 unrolls, holds every
candidate clone; when its code + initialized data exceed BYTES, the clones that add the most
code are refused one by one until it fits, each with a log line saying so.

pass pipelines: each variant is the pass pipeline --print-pipeline prints ('specialize help opt'
lists the passes); 'relayout' (all-args) re-lays out weights in the model before 'link' joins it
with the kernels. pipeline.txt holds the steps after 'link': 'specialize opt
-passes="$(cat DIR/<variant>/pipeline.txt)" DIR/<variant>/linked.ll' gives its optimized.ll.

artifacts in DIR/<variant>/: linked.ll, pipeline.txt, specialized.ll, optimized.ll (each .ll
with a .diff.ll with --diff-text), specialization.log and .json, profile.txt and .json (per function:
instructions, est. cycles), firmware.elf; DIR/report.md and DIR/report.json hold the comparison.
"""


def main(argv: list[str]) -> int:
    from specializer.optimize.variants import (DEFAULT_FLASH_BUDGET, DEFAULT_MAX_GROWTH, DEFAULT_ROUNDS,
                                               DEFAULT_UNROLL_CANDIDATES, VARIANTS)

    p = argparse.ArgumentParser(
        prog="specialize", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=SPECIALIZE_EPILOG,
        description="Specialize a model's calls on their constant arguments, build it against the libjit "
                    "kernels for Cortex-M4, run every variant on QEMU and compare sizes and cycles.")
    p.add_argument("model", metavar="FILE.ll", nargs="?", help="captured model.ll (model.json next to it) or an "
                   "XLA *.ir-no-opt.ll kernel module")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--all-args", dest="mode", action="store_const", const="all-args", default="dims",
                      help="specialize every constant argument (addresses, weights, frames) and add the "
                           "all-args variant to the comparison")
    mode.add_argument("--dims", dest="mode", action="store_const", const="dims",
                      help="specialize constant scalar (dimension) arguments only (the default)")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="comparison: output directory (default: next to FILE.ll, 'variants' for model.ll, "
                        "else '<name>.variants'); with -S/--emit: output file ('-' for stdout)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    add_speed_options(p)
    p.add_argument("--diff-text", action="store_true",
                   help="write each .ll of a build with its diff-oriented text next to it (*.diff.ll: stable names, "
                        "for diffing by hand; 'specialize diff-ir' renders its own)")
    p.add_argument("--variants", metavar="LIST",
                   help=f"comma-separated variants to build (default: separate,lto,llvm-funcspec,dims and, with "
                        f"--all-args, all-args; have: {','.join(VARIANTS)})")
    p.add_argument("--max-growth", type=growth, default=DEFAULT_MAX_GROWTH, metavar="X",
                   help=f"the clones of a callee may add at most X times its optimized code "
                        f"(default {DEFAULT_MAX_GROWTH:g}; 'none': no budget)")
    p.add_argument("--flash-budget", type=byte_count, default=DEFAULT_FLASH_BUDGET, metavar="BYTES",
                   help=f"code + data the specialized build may take, measured on the scratch build as its "
                        f"loops unroll; past it the clones adding most code are refused, each logged "
                        f"(default {DEFAULT_FLASH_BUDGET}: the board's 4 MiB less 64 KiB; K/M suffixes; 'none')")
    auto = ", ".join(str(t) if t else "LLVM's" for t in DEFAULT_UNROLL_CANDIDATES)
    p.add_argument("--unroll-threshold", type=unroll_threshold, default="auto", metavar="N",
                   help=f"LLVM loop-unroll threshold for the specializing variants: N, 'llvm' (LLVM's own, 150 "
                        f"at O2), or 'auto' (default): build and measure each of {auto} and keep the fastest "
                        f"(with -S/--emit: LLVM's); separate, lto and llvm-funcspec always use LLVM's")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, metavar="N",
                   help=f"specialization rounds, constant propagation between them (default {DEFAULT_ROUNDS})")
    p.add_argument("--shape-only", type=calls, default=frozenset(), metavar="N+N...",
                   help="all-args: specialize these of the model's calls (numbers as 'call N' in "
                        "specialization.log) by dims' rule and leave them out of relayout; by default a "
                        "comparison measures which calls dims runs faster and rebuilds all-args with those")
    p.add_argument("--pre-unroll", action="store_true",
                   help="unroll loops in the constant-propagation step too, before O2 (which always "
                        "unrolls): more unrolling, larger code")
    p.add_argument("-S", dest="emit", action="store_const", const="ll",
                   help="write the optimized specialized module as text IR instead of comparing (= --emit=ll)")
    p.add_argument("--emit", choices=["ll", "specialized-ll", "asm", "obj"],
                   help="write one artifact of the selected mode's build instead of comparing: optimized IR, "
                        "IR right after specialization, assembly, or an object file")
    p.add_argument("--log", metavar="FILE", help="with -S/--emit: also write the specialization log to FILE")
    p.add_argument("--print-pipeline", action="store_true",
                   help="print each variant's pass pipeline ('VARIANT: TEXT', one line each; with the "
                        "default --unroll-threshold auto one line per threshold tried) and stop; FILE.ll is "
                        "optional ('specialize help opt' lists the passes)")
    p.add_argument("--method", choices=["plugin", "icount"], default="plugin",
                   help="instruction counting: QEMU TCG plugin (default) or the -icount FPGAIO counter")
    p.add_argument("--timeout", type=float, default=120, help="seconds before a run counts as a hang")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr (shown on a terminal)")
    p.add_argument("--progress", action="store_true", help="progress lines on stderr even when it is not a terminal")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print where the time went, phase by phase (each pass, codegen, firmware links, "
                        "QEMU runs, profiles, report; self seconds, like LLVM's -time-passes), on stderr; with "
                        "--json, also as 'timings' in the JSON")
    a = p.parse_args(argv)
    threshold, candidates = a.unroll_threshold
    if a.rounds < 1:
        p.error("--rounds must be >= 1")
    if a.jobs is not None and a.jobs < 1:
        p.error("-j/--jobs must be >= 1")
    from specializer import inputs
    from specializer.report import tables as report
    from specializer.optimize import variants
    from specializer.driver.compare import compare
    from specializer import timing

    options = variants.Options.of(max_growth=a.max_growth, unroll_threshold=threshold, rounds=a.rounds,
                                  pre_unroll=a.pre_unroll, flash_budget=a.flash_budget, unroll_candidates=candidates,
                                  shape_only=a.shape_only)
    if a.variants:
        which = tuple(v.strip() for v in a.variants.split(",") if v.strip())
        bad = [v for v in which if v not in VARIANTS]
        if bad or not which:
            raise UserError(f"unknown variant '{bad[0] if bad else a.variants}' (have: {', '.join(VARIANTS)})")
    else:
        which = tuple(v for v in VARIANTS if v != variants.ALL_ARGS or a.mode == variants.ALL_ARGS)
    if a.model is None and not a.print_pipeline:
        p.error("the following arguments are required: FILE.ll")
    model = inputs.load(Path(a.model)) if a.model else None
    if a.print_pipeline:
        sys.stdout.write(_pipelines(model, which, options))
        return 0
    if a.emit:
        return _emit(model, a, options)
    path = Path(a.model)
    check_output_dir(p, a.output)
    out = Path(a.output) if a.output else path.with_name("variants" if path.name == "model.ll"
                                                         else model.name + ".variants")
    # on a terminal (or with --progress): a line per step; never mixed into a piped error line
    show = a.progress or (not a.quiet and sys.stderr.isatty())
    progress = progress_lines(f"specialize: {model.name}") if show else None
    with timing.recording() as rec:
        c = compare(model, out, options, which, method=a.method, timeout=a.timeout, progress=progress,
                    diff_text=a.diff_text, jobs=a.jobs, reuse=not a.no_cache)
    if a.verbose:  # times differ run to run: never in the report files, only when asked for
        print(f"specialize: {model.name}: where the time went\n{rec.table()}", file=sys.stderr)
    if a.json:
        text = report.json_text(c)
        if a.verbose:
            text = json.dumps(json.loads(text) | {"timings": rec.as_dict()}, indent=1, sort_keys=True) + "\n"
        print(text, end="")
    else:
        print(report.table(c, title=False) + report.note(c.reference))
        print(f"artifacts: {out}/<variant>/\n  (linked.ll, pipeline.txt, specialized.ll, optimized.ll, "
              "specialization.log, profile.txt)")
    return 0 if c.passed else 1


def _pipelines(model, which: tuple, options) -> str:
    """'VARIANT: PIPELINE' per variant; with several unroll thresholds to measure, one line per
    threshold ('dims (auto, 1000): ...'), as a comparison builds them."""
    from specializer.optimize import pipeline, variants
    from specializer.driver.compare import unroll_thresholds

    lines = []
    for v in which:
        if model is not None:
            tried = unroll_thresholds(model, v, options)
        else:  # no model: as for a captured one
            tried = tuple(options.unroll_candidates) if v in variants.SPECIALIZING and options.unroll_candidates \
                else (options.specialize.unroll_threshold,)
        for t in tried:
            label = v if len(tried) == 1 else f"{v} (auto, {t or 'llvm'})"
            text = pipeline.to_text(variants.pipeline_for(v, options.but(unroll_threshold=t)))
            lines.append(f"{label}: {text}\n")
    return "".join(lines)


def _emit(model, a, options) -> int:
    """One build of the selected mode, one artifact out (in the manner of opt -S / llc)."""
    from specializer.llvm import emit, module
    from specializer import files
    from specializer.optimize.variants import optimized

    o = optimized(model, a.mode, options)  # exactly the variant's build
    if a.log:
        files.write(Path(a.log), o.log_text())
    if a.emit == "specialized-ll":
        data: str | bytes = o.spec.text
    else:
        mod = o.module
        # the assembly a person reads shows the weights typed (`.long`), as llc prints it from optimized.ll
        data = {"ll": o.text, "asm": lambda: emit.emit_assembly(module.parse(o.text(), "optimized.ll")),
                "obj": lambda: emit.emit_object(mod)}[a.emit]()
    if not a.output or a.output == "-":
        if isinstance(data, bytes):
            raise UserError("--emit=obj needs -o FILE (an object file is not written to a terminal)")
        sys.stdout.write(data)
    else:
        files.write(Path(a.output), data)
    return 0
