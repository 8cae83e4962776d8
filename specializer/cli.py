"""`specialize`: the command line. Parses arguments and calls the pipeline stages."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from .errors import UserError

USAGE = """\
specialize capture FILE.py:FN -o DIR   capture a JAX function as DIR/model.ll + DIR/model.json
specialize [run] DIR/model.ll          build for Cortex-M4, run on QEMU, print one measured row
specialize examples [NAME ...]         capture and run the bundled example models
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
    a = p.parse_args(argv)
    if ":" not in a.target:
        raise UserError(f"'{a.target}': expected FILE.py:FUNCTION")
    path, fn = a.target.rsplit(":", 1)
    from .capture import capture

    c = capture(Path(path), fn, Path(a.output), ir_dots=a.ir_dots)
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
            argv = argv[1:]
        return _run(argv)
    except UserError as e:
        print(f"specialize: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
