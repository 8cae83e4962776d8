"""`specialize`: the command line. Each command parses its arguments in a module of its own here and
calls the driver; this module holds the usage, the one dispatch table and the error handling."""

from __future__ import annotations

import os
import sys

from specializer.cli import bundle, capture, compare, diffs, examples, layers, opt, run
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
specialize layers DIR/model.ll             per layer (.tflite, quantize()): shapes, MACs, bytes and est.
                                           cycles in every variant; RAM beside TFLite Micro's arena
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
COMMANDS = {"run": run.main, "capture": capture.main, "examples": examples.main, "diff": diffs.diff_main,
            "diff-ir": diffs.diff_ir_main, "bundle": bundle.main, "opt": opt.main,
            "layers": layers.main}
HELP_ALIASES = {"specialize": compare.main, "compare": compare.main}


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
        return compare.main(argv)
    except UserError as e:
        print(f"specialize: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        if e.filename is None or isinstance(e, BrokenPipeError):
            raise
        # where the tool writes or reads a path the user gave: a full disk, a directory that cannot be
        # made (the -o check catches what it can before anything is written)
        print(f"specialize: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
