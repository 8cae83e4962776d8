"""`specialize`: the command line. Parses arguments and calls the pipeline stages."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from specializer.errors import UserError

USAGE = """\
specialize [--all-args] FILE.ll [-o DIR]   build the variants (separate, lto, llvm-funcspec, dims[, all-args]),
                                           run each on QEMU, print the comparison; artifacts in DIR
specialize [--all-args] FILE.ll -S -o OUT  write the optimized specialized module (no run)
specialize run DIR/model.ll                build the lto variant, run it on QEMU, print one row;
                                           --profile: cost per kernel and HLO op (--mca: llvm-mca)
specialize run FILE.ll --entry NAME        call NAME (no arguments) of any module on QEMU: its return
                                           value, instructions, est. cycles, flash, RAM and stack
specialize capture FILE.py:FN -o DIR       capture a JAX function as DIR/model.ll + DIR/model.json
specialize examples [NAME ...]             capture and run the bundled example models
specialize diff BASE.json NEW.json         compare two reports (flash, RAM, instructions, est. cycles);
                                           --fail-on cycles:+2%,flash:+1% exits 1 on a regression
specialize diff-ir A B                     what changed between two modules (.ll files or build
                                           directories), function by function
specialize bundle FILE.ll -o DIR           one variant (default all-args) as an object, static library,
                                           C header and example main.c for a firmware
specialize --print-pipeline [--all-args]   each variant's pass pipeline as text, one line per variant
specialize opt -passes=TEXT IN.ll -o OUT   run a pass pipeline on a .ll (a build's linked.ll with its
                                           pipeline.txt gives its optimized.ll); 'specialize help opt'
specialize --version                       print the version

FILE.ll: a captured model.ll (model.json next to it), or an XLA CPU kernel dump *.ir-no-opt.ll
(sizes only: it has no inputs to run). 'specialize FILE.ll --help' lists the options.
"""

RUN_NOTE = """\
the lto build (model + kernels in one module, internalized, O2), accounted as in a comparison;
flash: code (model, kernels, the libc/libm it reaches), weights and constants, .data's image;
RAM: .data + .bss (buffers, arena, libc's data) + the measured call's peak stack;
instructions: QEMU-counted, entry call only; est. cycles: TRM-weighted; --json: the breakdown"""


def _table(rows: list) -> str:
    """One row per run within 100 columns (JSON: the breakdown)."""
    from specializer.report.tables import github_table

    headers = ["model", "result", "max rel err", "flash", "RAM", "stack", "instructions", "est. cycles"]
    body = [[r.model, r.status, f"{r.max_rel_err:.2e}", *map(str, (r.flash, r.ram, r.stack, r.insns)),
             "n/a" if r.cycles is None else str(r.cycles)] for r in rows]
    return github_table(body, headers, ("left", "left") + ("right",) * 6) + "\n" + RUN_NOTE


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
    from specializer.capture.capture import capture

    c = capture(Path(path), fn, Path(a.output), ir_dots=a.ir_dots, timeout=a.timeout)
    print(f"wrote {c.model_ll} and {c.manifest_json}")
    return 0


def _run(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="specialize run",
                                description="Build a captured model.ll for Cortex-M4 as the lto variant (model "
                                            "+ kernels in one module, internalized, O2), run it on QEMU, "
                                            "measure it.")
    p.add_argument("model", metavar="model.ll")
    p.add_argument("--entry", metavar="NAME",
                   help="call the function NAME of any module instead of a captured model's entry: no arguments, "
                        "returning void, i1, i8, i16, i32, i64, float, double or ptr; prints the value it returns")
    p.add_argument("--max-insns", type=int, default=None, metavar="N",
                   help="with --entry: stop the call after N instructions as a hang (default 1,000,000,000)")
    p.add_argument("--json", action="store_true", help="print the row as JSON")
    p.add_argument("--method", choices=["plugin", "icount"], default="plugin",
                   help="instruction counting: QEMU TCG plugin (default) or the -icount FPGAIO counter")
    p.add_argument("--timeout", type=float, default=120, help="seconds before a run counts as a hang")
    p.add_argument("--keep", metavar="DIR", help="keep the build (object, ELF, harness) in DIR")
    p.add_argument("--profile", action="store_true",
                   help="also print the profile per kernel and HLO instruction (op_name, source line), from "
                        "line-table debug info (the code is the same); profile.txt/.json in --keep DIR")
    p.add_argument("--mca", action="store_true",
                   help="with --profile: add llvm-mca's Cortex-M4 cycle estimate of the same blocks")
    a = p.parse_args(argv)
    from specializer.driver.run import run_model

    model = Path(a.model)
    if not model.is_file():
        raise UserError(f"{model}: no such file")
    if a.entry is not None:
        if a.profile or a.mca:
            raise UserError("--profile applies to captured models, not --entry runs")
        return _run_entry(model, a)
    if a.max_insns is not None:
        raise UserError("--max-insns applies to --entry runs only")
    if (a.profile or a.mca) and a.method != "plugin":
        raise UserError("--profile needs the QEMU plugin's block profile: drop --method icount")
    if a.mca and not a.profile:
        raise UserError("--mca is a column of the profile: add --profile")
    with tempfile.TemporaryDirectory(prefix="specializer-build-") as tmp:
        if a.profile:
            from specializer.driver.profile import profile_model
            from specializer.report import profile_table
            from specializer.run import hloprofile

            p_ = profile_model(model, Path(a.keep or tmp), timeout=a.timeout, mca=a.mca)
            row = p_.row
        else:
            row, _ = run_model(model, Path(a.keep or tmp), method=a.method, timeout=a.timeout)
    if a.json:
        out = row.as_dict()
        if a.profile:
            out["profile"] = json.loads(hloprofile.as_json(p_.rows, p_.hlo))
        print(json.dumps(out, indent=1, sort_keys=True))
    else:
        print(_table([row]))
        if a.profile:
            if p_.hlo is None:
                print(f"\nno {model.with_name('hlo.json')}: rows name kernels, not HLO instructions "
                      "(capture the model again)")
            print("\n" + profile_table.table(p_.rows) + profile_table.NOTE)
    return 0 if row.status == "pass" else 1

ENTRY_NOTE = """\
the lto build of the module (with the kernels it calls, internalized but for NAME, O2);
flash: code, constants, .data's image and the libc/libm it reaches; RAM: .data + .bss + peak stack;
instructions: QEMU-counted, the call only; est. cycles: TRM-weighted; --json: the breakdown"""


def _run_entry(path: Path, a) -> int:
    from specializer import inputs
    from specializer.driver.run import run_entry
    from specializer.run.rawrun import DEFAULT_MAX_INSNS
    from specializer.report.tables import github_table

    model = inputs.load(path)
    warn = lambda text: print(f"specialize: {text}", file=sys.stderr, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="specializer-build-") as tmp:
        row = run_entry(model, a.entry, Path(a.keep or tmp), method=a.method, timeout=a.timeout,
                        max_insns=DEFAULT_MAX_INSNS if a.max_insns is None else a.max_insns, warn=warn)
    if a.json:
        print(json.dumps(row.as_dict(), indent=1, sort_keys=True))
        return 0
    headers = ["entry", "returned", "flash", "RAM", "stack", "instructions", "est. cycles"]
    value = row.returns if row.value is None else f"{row.returns} {row.value}"
    body = [[row.entry, value, *map(str, (row.flash, row.ram, row.stack, row.insns)),
             "n/a" if row.cycles is None else str(row.cycles)]]
    print(github_table(body, headers, ("left", "left") + ("right",) * 5) + "\n" + ENTRY_NOTE)
    return 0


BUNDLE_EPILOG = """\
DIR receives:
  <fn>.o, lib<fn>.a  the variant's code, the kernel code it uses, weights and buffers; exports only
                     the entry and the I/O buffers; libc/libm symbols stay undefined (newlib)
  <fn>.h             entry prototype, I/O buffers with C types, shapes, dtypes; flash, RAM, stack
                     and arena bytes; the undefined symbols; section names for placing weights
  main.c             fills the inputs with the captured example, calls the entry, prints the outputs
  qemu/              startup.S and link.ld to try it on QEMU's mps2-an386 with newlib's semihosting

try it:
  arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -O2 --specs=rdimon.specs \\
    -nostartfiles -Wl,--gc-sections -Wl,--no-enum-size-warning -T DIR/qemu/link.ld -IDIR \\
    DIR/qemu/startup.S DIR/main.c DIR/lib<fn>.a -lm -o model.elf
  qemu-system-arm -M mps2-an386 -nographic -semihosting-config enable=on,target=native -kernel model.elf
"""


def _bundle(argv: list[str]) -> int:
    from specializer.optimize.variants import DEFAULT_FLASH_BUDGET, DEFAULT_MAX_GROWTH, VARIANTS, Options

    p = argparse.ArgumentParser(prog="specialize bundle", formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=BUNDLE_EPILOG,
                                description="Build one variant of a captured model and write it as a bundle a "
                                            "firmware links: object, static library, C header, example main.c.")
    p.add_argument("model", metavar="model.ll", help="a captured model.ll (model.json next to it)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="the bundle's directory")
    p.add_argument("--variant", default="all-args", choices=VARIANTS, help="which build (default all-args)")
    p.add_argument("--max-growth", type=_growth, default=DEFAULT_MAX_GROWTH, metavar="X",
                   help=f"specializing variants: clone budget per callee (default {DEFAULT_MAX_GROWTH:g})")
    p.add_argument("--flash-budget", type=_bytes, default=DEFAULT_FLASH_BUDGET, metavar="BYTES",
                   help=f"specializing variants: code + data budget (default {DEFAULT_FLASH_BUDGET})")
    p.add_argument("--unroll-threshold", type=_threshold, default="llvm", metavar="N",
                   help="specializing variants: LLVM loop-unroll threshold, N or 'llvm' (default: LLVM's own); "
                        "a comparison's table says which it measured faster")
    p.add_argument("--shape-only", type=_calls, default=frozenset(), metavar="N+N...",
                   help="all-args: these calls specialized by dims' rule (a comparison's table lists the "
                        "calls it measured faster that way)")
    p.add_argument("--no-run", action="store_true",
                   help="do not run the bundle on QEMU (no stack measurement, no check against JAX)")
    p.add_argument("--timeout", type=float, default=120, help="seconds before the QEMU run counts as a hang")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    a = p.parse_args(argv)
    from specializer import inputs
    from specializer.driver.bundle import bundle

    path = Path(a.model)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    model = inputs.load(path)
    progress = None if a.quiet else (lambda text: print(f"specialize: {model.name}: {text}", file=sys.stderr,
                                                         flush=True))
    threshold, candidates = a.unroll_threshold
    if candidates:
        raise UserError("bundle builds without measuring first: give --unroll-threshold N or llvm, not auto")
    options = Options.of(max_growth=a.max_growth, flash_budget=a.flash_budget, unroll_threshold=threshold,
                         shape_only=a.shape_only)
    b = bundle(model, Path(a.output), a.variant, options,
               run=not a.no_run, timeout=a.timeout, progress=progress)
    fp = b.footprint
    ram = f"RAM {fp.static_ram + b.row.stack} B (stack {b.row.stack} B)" if b.row else \
        f"static RAM {fp.static_ram} B (stack not measured)"
    print(f"wrote {b.object}, {b.library}, {b.header}, {b.main}, {b.dir / 'qemu'}/")
    print(f"{model.name} ({b.variant}): flash {fp.flash} B, {ram}, arena {b.arena} B; "
          f"undefined: {', '.join(b.undefined) or 'none'}")
    return 0


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
with a .diff.ll), specialization.log and .json, profile.txt and .json (per function:
instructions, est. cycles), firmware.elf; DIR/report.md and DIR/report.json hold the comparison.
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


def _calls(text: str) -> frozenset:
    from specializer.optimize import callsites

    try:
        return callsites.parse_set(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not call numbers joined by '+' (e.g. 3+7+11): '{text}'") from None


def _threshold(text: str) -> tuple:
    from specializer.optimize.variants import unroll_setting

    try:
        return unroll_setting(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _bytes(text: str) -> int | None:
    """A byte count: 4194304, 4096K, 4M (K and M are 1024-based); 'none' for no budget."""
    t = text.strip().lower()
    if t in ("none", "off", "inf"):
        return None
    scale = {"k": 1024, "kib": 1024, "m": 1024 * 1024, "mib": 1024 * 1024}
    unit = next((u for u in sorted(scale, key=len, reverse=True) if t.endswith(u)), None)
    try:
        value = float(t[: -len(unit)] if unit else t) * (scale[unit] if unit else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a byte count: '{text}' (e.g. 4194304, 512K, 4M)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return int(value)


def _specialize(argv: list[str]) -> int:
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
    p.add_argument("--variants", metavar="LIST",
                   help=f"comma-separated variants to build (default: separate,lto,llvm-funcspec,dims and, with "
                        f"--all-args, all-args; have: {','.join(VARIANTS)})")
    p.add_argument("--max-growth", type=_growth, default=DEFAULT_MAX_GROWTH, metavar="X",
                   help=f"the clones of a callee may add at most X times its optimized code "
                        f"(default {DEFAULT_MAX_GROWTH:g}; 'none': no budget)")
    p.add_argument("--flash-budget", type=_bytes, default=DEFAULT_FLASH_BUDGET, metavar="BYTES",
                   help=f"code + data the specialized build may take, measured on the scratch build as its "
                        f"loops unroll; past it the clones adding most code are refused, each logged "
                        f"(default {DEFAULT_FLASH_BUDGET}: the board's 4 MiB less 64 KiB; K/M suffixes; 'none')")
    auto = ", ".join(str(t) if t else "LLVM's" for t in DEFAULT_UNROLL_CANDIDATES)
    p.add_argument("--unroll-threshold", type=_threshold, default="auto", metavar="N",
                   help=f"LLVM loop-unroll threshold for the specializing variants: N, 'llvm' (LLVM's own, 150 "
                        f"at O2), or 'auto' (default): build and measure each of {auto} and keep the fastest "
                        f"(with -S/--emit: LLVM's); separate, lto and llvm-funcspec always use LLVM's")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, metavar="N",
                   help=f"specialization rounds, constant propagation between them (default {DEFAULT_ROUNDS})")
    p.add_argument("--shape-only", type=_calls, default=frozenset(), metavar="N+N...",
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
    a = p.parse_args(argv)
    threshold, candidates = a.unroll_threshold
    if a.rounds < 1:
        p.error("--rounds must be >= 1")
    from specializer import inputs
    from specializer.report import tables as report
    from specializer.optimize import variants
    from specializer.driver.compare import compare

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
    out = Path(a.output) if a.output else path.with_name("variants" if path.name == "model.ll"
                                                         else model.name + ".variants")
    # on a terminal (or with --progress): a line per step; never mixed into a piped error line
    show = a.progress or (not a.quiet and sys.stderr.isatty())
    progress = (lambda text: print(f"specialize: {model.name}: {text}", file=sys.stderr, flush=True)) if show else None
    c = compare(model, out, options, which, method=a.method, timeout=a.timeout, progress=progress)
    if a.json:
        print(report.json_text(c), end="")
    else:
        print(report.table(c, title=False) + report.NOTE)
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
    from specializer.llvm import emit
    from specializer import files
    from specializer.optimize.variants import optimized

    o = optimized(model, a.mode, options)  # exactly the variant's build
    if a.log:
        files.write(Path(a.log), o.log_text())
    if a.emit == "specialized-ll":
        data: str | bytes = o.spec.text
    else:
        mod = o.module
        data = {"ll": lambda: str(mod), "asm": lambda: emit.emit_assembly(mod),
                "obj": lambda: emit.emit_object(mod)}[a.emit]()
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
    from specializer.driver.examples import run_examples

    rows = run_examples(a.names, Path(a.output))
    print(json.dumps([r.as_dict() for r in rows], indent=1, sort_keys=True) if a.json else _table(rows))
    return 0 if all(r.status == "pass" for r in rows) else 1


DIFF_EPILOG = """\
BASE.json, NEW.json: reports as scripts/benchmark.py writes them (reports/variants.json) or as
'specialize --json' prints them. Every model and variant in both is compared: the change of
flash, RAM, instructions and est. cycles in percent ('=' unchanged, n/a where a report lacks
the metric). Models and variants only one report has are listed, not compared.

exit status: 0 no regression; 1 a regression: a metric over its --fail-on limit, or a variant
that passed in BASE and fails (or no longer builds) in NEW; 2 bad input (one line on stderr).
"""


def _diff(argv: list[str]) -> int:
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


def _diff_ir(argv: list[str]) -> int:
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


OPT_EPILOG = """\
A pipeline is PASS or PASS{OPTION=VALUE,...}, comma-separated: 'O2', 'specialize{mode=all-args,rounds=4}'
(an option left out takes its default). 'specialize --print-pipeline' prints each variant's.
Stages: 'relayout' acts on the model before it is linked (IN.ll is then a model.ll with model.json
next to it; without 'link' the output is the model it rewrote), 'link' links it with the libjit
kernels and internalizes it (after it: a build's linked.ll), the other passes act on a module. A
build writes DIR/<variant>/pipeline.txt, the steps after 'link': rerun them on its linked.ll to get
its optimized.ll byte for byte; drop steps from the end (or the middle) to bisect.
IN.ll is read as written, as LLVM's opt reads it, unless it is a model (model.json next to it, or a
pipeline with model passes): then as 'specialize' reads it (an XLA kernel dump normalized and
retargeted, DSP asm as intrinsics). Those rewrites are passes too: normalize, retarget, fminmax,
inline-asm. Without -passes the module is read, verified and printed.

passes:
"""


def _opt(argv: list[str]) -> int:
    from specializer.optimize import pipeline

    p = argparse.ArgumentParser(prog="specialize opt", formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=OPT_EPILOG + pipeline.help_text(),
                                description="Run a textual pass pipeline on an LLVM module (in the manner of "
                                            "LLVM's opt -passes=).")
    p.add_argument("input", metavar="IN.ll", help="a module (e.g. a build's linked.ll), or a model.ll when the "
                   "pipeline has 'link'")
    p.add_argument("-p", "-passes", "--passes", dest="passes", default="", metavar="PIPELINE",
                   help="the passes to run, e.g. \"$(cat DIR/all-args/pipeline.txt)\" (default: none)")
    p.add_argument("-o", "--output", default="-", metavar="OUT.ll", help="the result as text IR (default stdout)")
    p.add_argument("--diff-text", action="store_true", help="write the result as diff-oriented text instead "
                   "(what a build's *.diff.ll holds: specializer/optimize/difftext.py)")
    p.add_argument("--manifest", metavar="model.json", help="the model's manifest: its weights are tensors, which "
                   "specialize{mode=dims} never specializes, and the log shows their shapes (a model.ll input "
                   "reads the model.json next to it)")
    p.add_argument("--log", metavar="FILE", help="also write the specialization log to FILE")
    a = p.parse_args(argv)
    from specializer import files, inputs
    from specializer.capture.manifest import Manifest
    from specializer.llvm import irtext, read
    from specializer.optimize import difftext
    from specializer.optimize.state import BuildContext, BuildState
    from specializer.optimize.variants import Optimized

    # a bad pipeline is reported before any input is read
    steps = pipeline.parse(a.passes) if a.passes.strip() else ()
    path = Path(a.input)
    if pipeline.needs_model(steps) or inputs.manifest_path(path).is_file():  # named by its file, as a build does
        # the one place `opt` reads the environment: which CMSIS-NN the kernel library is built with
        state = BuildState.of_model(inputs.load(path), BuildContext.default() if pipeline.needs_model(steps) else None)
    else:  # as written, so the rewrites reading does can be tested as passes; a module keeps its ID
        text = read.read(path)  # (a build's linked.ll: the model's), so the output is the build's
        module_id = irtext.module_id(text)
        state = BuildState(path.name if module_id is None else module_id, str(path), text, untrusted=True)
    if a.manifest:
        state.shapes = inputs.tensor_shapes(Manifest.load(Path(a.manifest)))
    s = pipeline.run(steps, state)
    if a.diff_text:
        out = difftext.render_module(s.as_module(), difftext.clone_notes(s.spec.sites) if s.spec else None).text()
    else:
        out = str(s.as_module())
    if a.log:
        files.write(Path(a.log), Optimized(s.module, s.linked or "", s.spec, s.relaid, s.zero_weights,
                                           s.aliases, steps).log_text())
    if a.output == "-":
        sys.stdout.write(out)
    else:
        files.write(Path(a.output), out)
    return 0


def _version() -> str:
    """The package's version and the pinned versions its output depends on (as LLVM tools print theirs)."""
    from importlib.metadata import PackageNotFoundError, version

    import llvmlite.binding as llvm

    from specializer import __version__

    def v(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    llvm_v = ".".join(map(str, llvm.llvm_version_info))
    return (f"specialize {__version__}\n"
            f"  llvmlite {v('llvmlite')} (LLVM {llvm_v}), jax {v('jax')}, jaxlib {v('jaxlib')}\n")


def _help(command) -> int:
    try:
        command(["--help"])
    except SystemExit as e:  # argparse exits after printing the help
        return int(e.code or 0)
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        rc = _main(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()  # here, so a closed pipe shows up inside the try, not at exit
        return rc
    except BrokenPipeError:
        # the reader went away (`specialize ... | head`): what it read is all it wanted; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a program killed by it


# The one dispatch table: `specialize NAME ...` runs COMMANDS[NAME]; anything else is a comparison
# (`specialize [--all-args] FILE.ll`). `specialize help NAME` prints that command's --help.
COMMANDS = {"run": _run, "capture": _capture, "examples": _examples, "diff": _diff, "diff-ir": _diff_ir,
            "bundle": _bundle, "opt": _opt}
HELP_ALIASES = {"specialize": _specialize, "compare": _specialize}


def _main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    if argv and argv[0] == "--version":
        print(_version(), end="")
        return 0
    if argv and argv[0] == "help":  # `specialize help [COMMAND]`, as git and LLVM tools have it
        if len(argv) == 1:
            print(USAGE, end="")
            return 0
        command = COMMANDS.get(argv[1]) or HELP_ALIASES.get(argv[1])
        if command is not None:
            return _help(command)
        print(f"specialize: error: help: no command '{argv[1]}' (have: {', '.join(COMMANDS)}, specialize)",
              file=sys.stderr)
        return 2
    try:
        if argv and argv[0] in COMMANDS:
            return COMMANDS[argv[0]](argv[1:])
        return _specialize(argv)
    except UserError as e:
        print(f"specialize: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130

if __name__ == "__main__":
    sys.exit(main())
