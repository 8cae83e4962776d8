"""`specialize run`: a captured model's lto build (or one function of any module, --entry) on QEMU, one row."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from specializer.errors import UserError


RUN_NOTE = """\
the lto build (model + kernels in one module, internalized, O2), accounted as in a comparison;
flash: code (model, kernels, the libc/libm it reaches), weights and constants, .data's image;
RAM: .data + .bss (buffers, arena, libc's data) + the measured call's peak stack;
instructions: QEMU-counted, entry call only; est. cycles: TRM-weighted; --json: the breakdown"""


def table(rows: list) -> str:
    """One row per run within 100 columns (JSON: the breakdown)."""
    from specializer.report.tables import github_table

    headers = ["model", "result", "max rel err", "flash", "RAM", "stack", "instructions", "est. cycles"]
    body = [[r.model, r.status, f"{r.max_rel_err:.2e}", *map(str, (r.flash, r.ram, r.stack, r.insns)),
             "n/a" if r.cycles is None else str(r.cycles)] for r in rows]
    return github_table(body, headers, ("left", "left") + ("right",) * 6) + "\n" + RUN_NOTE


def main(argv: list[str]) -> int:
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
        return _entry(model, a)
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
        print(table([row]))
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


def _entry(path: Path, a) -> int:
    from specializer import inputs
    from specializer.driver.run import run_entry
    from specializer.report.tables import github_table
    from specializer.run.rawrun import DEFAULT_MAX_INSNS

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
