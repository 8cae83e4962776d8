"""`specialize`: the command line. Parses arguments and calls the pipeline stages."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from .errors import UserError

USAGE = """\
specialize [--all-args] FILE.ll [-o DIR]   build the variants (separate, lto, llvm-funcspec, dims[, all-args]),
                                           run each on QEMU, print the comparison; artifacts in DIR
specialize [--all-args] FILE.ll -S -o OUT  write the optimized specialized module (no run)
specialize run DIR/model.ll                build (link + O2) for Cortex-M4, run on QEMU, print one row
specialize capture FILE.py:FN -o DIR       capture a JAX function as DIR/model.ll + DIR/model.json
specialize examples [NAME ...]             capture and run the bundled example models

FILE.ll: a captured model.ll (model.json next to it), or an XLA CPU kernel dump *.ir-no-opt.ll
(sizes only: it has no inputs to run). 'specialize FILE.ll --help' lists the options.
"""

def _table(rows: list) -> str:
    from tabulate import tabulate

    headers = ["model", "result", "max abs err", "max rel err", ".text", ".rodata", ".data", ".bss",
               "instructions", "est. cycles"]
    body = [[r.model, r.status, f"{r.max_abs_err:.2e}", f"{r.max_rel_err:.2e}", r.text, r.rodata, r.data,
             r.bss, r.insns, r.cycles] for r in rows]
    note = ("sizes: bytes of the model in the ELF; instructions: QEMU-counted (TCG plugin), entry call only; "
            "cycles: TRM-weighted estimate")
    return tabulate(body, headers=headers, tablefmt="github") + "\n" + note


def _capture(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="specialize capture",
                                description="Capture a JAX function as one Cortex-M4 LLVM module.")
    p.add_argument("target", metavar="FILE.py:FN")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="writes DIR/model.ll and DIR/model.json")
    p.add_argument("--ir-dots", action="store_true",
                   help="let XLA emit its dots as LLVM IR (its experimental IR GEMM) instead of runtime calls")
    p.add_argument("--timeout", type=float, default=600, metavar="SECONDS",
                   help="give up when JAX's reference run of the function takes longer (default 600)")
    a = p.parse_args(argv)
    if ":" not in a.target:
        raise UserError(f"'{a.target}': expected FILE.py:FUNCTION")
    path, fn = a.target.rsplit(":", 1)
    from .capture import capture

    c = capture(Path(path), fn, Path(a.output), ir_dots=a.ir_dots, timeout=a.timeout)
    print(f"wrote {c.model_ll} and {c.manifest_json}")
    return 0


def _run(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="specialize",
                                description="Build a captured model.ll for Cortex-M4, run it on QEMU, measure it.")
    p.add_argument("model", metavar="model.ll")
    p.add_argument("--json", action="store_true", help="print the row as JSON")
    p.add_argument("--method", choices=["plugin", "icount"], default="plugin",
                   help="instruction counting: QEMU TCG plugin (default) or the -icount FPGAIO counter")
    p.add_argument("--timeout", type=float, default=120, help="seconds before a run counts as a hang")
    p.add_argument("--keep", metavar="DIR", help="keep the build (object, ELF, harness) in DIR")
    a = p.parse_args(argv)
    from .measure import run_model

    model = Path(a.model)
    if not model.is_file():
        raise UserError(f"{model}: no such file")
    with tempfile.TemporaryDirectory(prefix="specializer-build-") as tmp:
        row, _ = run_model(model, Path(a.keep or tmp), method=a.method, timeout=a.timeout)
    print(json.dumps(row.as_dict(), indent=1, sort_keys=True) if a.json else _table([row]))
    return 0 if row.status == "pass" else 1


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
                 (CMSIS instance structs), which become private constant globals
  dims and all-args run in rounds (constant propagation between them) until no new clone, then O2.
  A stack object counts as constant at a call when the callee only reads it (readonly), every
  store to it is a constant, in the call's block and before the call, and nothing else uses it.

size budget (--max-growth X): the clones and their callees are optimized in a scratch copy of
the module (clones kept out of line, callees unspecialized). A callee's size counts every
function it calls; a clone adds its own code and what only it calls. All clones of one callee
together may add at most X times the callee's size. Clones are admitted in the order of their
first call site; one that would exceed its callee's budget is refused, its call sites keep
calling the original, and the log says so. 'none' turns the budget off.

artifacts in DIR/<variant>/: linked.ll, specialized.ll, optimized.ll, specialization.log and
.json, profile.txt and .json (per function: instructions, est. cycles), firmware.elf;
DIR/report.md and DIR/report.json hold the comparison.
"""


def _growth(text: str) -> float | None:
    if text.lower() in ("none", "off", "inf"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: '{text}'") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def _specialize(argv: list[str]) -> int:
    from .variants import DEFAULT_MAX_GROWTH, DEFAULT_ROUNDS, VARIANTS

    p = argparse.ArgumentParser(
        prog="specialize", formatter_class=argparse.RawDescriptionHelpFormatter, epilog=SPECIALIZE_EPILOG,
        description="Specialize a model's calls on their constant arguments, build it against the libjit "
                    "kernels for Cortex-M4, run every variant on QEMU and compare sizes and cycles.")
    p.add_argument("model", metavar="FILE.ll", help="captured model.ll (model.json next to it) or an XLA "
                   "*.ir-no-opt.ll kernel module")
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
    p.add_argument("--variants", metavar="LIST",
                   help=f"comma-separated variants to build (default: separate,lto,llvm-funcspec,dims and, with "
                        f"--all-args, all-args; have: {','.join(VARIANTS)})")
    p.add_argument("--max-growth", type=_growth, default=DEFAULT_MAX_GROWTH, metavar="X",
                   help=f"the clones of a callee may add at most X times its optimized code "
                        f"(default {DEFAULT_MAX_GROWTH:g}; 'none': no budget)")
    p.add_argument("--unroll-threshold", type=int, metavar="N",
                   help="LLVM loop-unroll threshold for the specializing variants (default: LLVM's, 150 at O2)")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, metavar="N",
                   help=f"specialization rounds, constant propagation between them (default {DEFAULT_ROUNDS})")
    p.add_argument("--pre-unroll", action="store_true",
                   help="unroll loops in the constant-propagation step too, before O2 (which always "
                        "unrolls): more unrolling, larger code")
    p.add_argument("-S", dest="emit", action="store_const", const="ll",
                   help="write the optimized specialized module as text IR instead of comparing (= --emit=ll)")
    p.add_argument("--emit", choices=["ll", "specialized-ll", "asm", "obj"],
                   help="write one artifact of the selected mode's build instead of comparing: optimized IR, "
                        "IR right after specialization, assembly, or an object file")
    p.add_argument("--log", metavar="FILE", help="with -S/--emit: also write the specialization log to FILE")
    p.add_argument("--method", choices=["plugin", "icount"], default="plugin",
                   help="instruction counting: QEMU TCG plugin (default) or the -icount FPGAIO counter")
    p.add_argument("--timeout", type=float, default=120, help="seconds before a run counts as a hang")
    a = p.parse_args(argv)
    if a.unroll_threshold is not None and a.unroll_threshold < 0:
        p.error("--unroll-threshold must be >= 0")
    if a.rounds < 1:
        p.error("--rounds must be >= 1")
    from . import inputs, report, variants
    from .compare import compare

    options = variants.Options(max_growth=a.max_growth, unroll_threshold=a.unroll_threshold, rounds=a.rounds,
                               pre_unroll=a.pre_unroll)
    model = inputs.load(Path(a.model))
    if a.emit:
        return _emit(model, a, options)
    if a.variants:
        which = tuple(v.strip() for v in a.variants.split(",") if v.strip())
        bad = [v for v in which if v not in VARIANTS]
        if bad or not which:
            raise UserError(f"unknown variant '{bad[0] if bad else a.variants}' (have: {', '.join(VARIANTS)})")
    else:
        which = ("separate", "lto", "llvm-funcspec", "dims") + (("all-args",) if a.mode == "all-args" else ())
    path = Path(a.model)
    out = Path(a.output) if a.output else path.with_name("variants" if path.name == "model.ll"
                                                         else model.name + ".variants")
    c = compare(model, out, options, which, method=a.method, timeout=a.timeout)
    if a.json:
        print(report.json_text(c), end="")
    else:
        print(report.table(c, title=False) + report.NOTE)
        print(f"artifacts: {out}/<variant>/ (linked.ll, specialized.ll, optimized.ll, specialization.log, "
              "profile.txt)")
    return 0 if c.passed else 1


def _emit(model, a, options) -> int:
    """One build of the selected mode, one artifact out (in the manner of opt -S / llc)."""
    from . import codegen, files, ir, passes
    from .variants import specialize_rounds, linked

    mod = linked(model)
    spec = specialize_rounds(str(mod), a.mode, options, model.shapes, f"{model.path.name} ({a.mode})")
    if a.log:
        files.write(Path(a.log), spec.log_text())
    if a.emit == "specialized-ll":
        data: str | bytes = spec.text
    else:
        mod = ir.parse(spec.text, "specialized.ll")
        passes.constprop(mod, options.unroll_threshold, options.pre_unroll)
        passes.optimize(mod, options.unroll_threshold)
        data = {"ll": lambda: str(mod), "asm": lambda: codegen.emit_assembly(mod),
                "obj": lambda: codegen.emit_object(mod)}[a.emit]()
    if not a.output or a.output == "-":
        if isinstance(data, bytes):
            raise UserError("--emit=obj needs -o FILE (an object file is not written to a terminal)")
        sys.stdout.write(data)
    else:
        files.write(Path(a.output), data)
    return 0


def _examples(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="specialize examples", description="Capture and run the bundled examples.")
    p.add_argument("names", nargs="*")
    p.add_argument("--json", action="store_true")
    p.add_argument("-o", "--output", default="out/examples", metavar="DIR")
    a = p.parse_args(argv)
    from .examples import run_examples

    rows = run_examples(a.names, Path(a.output))
    print(json.dumps([r.as_dict() for r in rows], indent=1, sort_keys=True) if a.json else _table(rows))
    return 0 if all(r.status == "pass" for r in rows) else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    try:
        if argv and argv[0] == "capture":
            return _capture(argv[1:])
        if argv and argv[0] == "examples":
            return _examples(argv[1:])
        if argv and argv[0] == "run":
            return _run(argv[1:])
        return _specialize(argv)
    except UserError as e:
        print(f"specialize: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
