"""Per-function profile: the QEMU plugin's block histogram mapped onto the ELF's function symbols.

Each translation block the plugin reports (start address, instructions, executions, taken
branches) is charged to the function symbol whose [address, address + size) holds it. The
instructions and TRM-weighted cycles of a function are those of its blocks (cycles.py costs),
so the per-function totals add up to the run's figures. No addresses are written: the
artifacts are meant for diffing one variant against another.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from specializer.run.cycles import block_cycles, fallthrough
from specializer.run.qemu import Profile
from specializer.run.symbols import functions

UNKNOWN = "(no symbol)"


@dataclass(frozen=True)
class FunctionCost:
    name: str
    bytes: int  # code bytes of the function (ELF symbol size)
    insns: int  # executed instructions (QEMU-counted)
    cycles: int  # TRM-weighted cycle estimate
    calls: int  # executions of the function's first block (entries, incl. loop back-edges to it)


def function_profile(elf: Path, profile: Profile) -> list[FunctionCost]:
    """Functions that ran during the measured call, most cycles first (ties by name)."""
    funcs = functions(elf)
    starts = [f[0] for f in funcs]
    acc: dict[str, list[int]] = {}
    into = fallthrough(profile)
    for b in profile.blocks:
        i = bisect.bisect_right(starts, b.addr) - 1
        if i >= 0 and b.addr < funcs[i][0] + funcs[i][1]:
            start, size, name = funcs[i]
        else:
            start, size, name = -1, 0, UNKNOWN
        a = acc.setdefault(name, [size, 0, 0, 0])
        a[1] += b.execs * len(b.insns)
        a[2] += block_cycles(b, into.get(b.addr))
        if b.addr == start:
            a[3] += b.execs
    rows = [FunctionCost(n, *v) for n, v in acc.items()]
    return sorted(rows, key=lambda r: (-r.cycles, r.name))


def table(rows: list[FunctionCost]) -> str:
    from tabulate import tabulate

    total = sum(r.cycles for r in rows) or 1
    body = [[r.name, r.bytes, r.insns, r.cycles, f"{100 * r.cycles / total:.1f}%", r.calls] for r in rows]
    return tabulate(body, headers=["function", "bytes", "instructions", "est. cycles", "share", "entries"],
                    tablefmt="github") + "\n"


def write(rows: list[FunctionCost], out_dir: Path) -> None:
    """profile.txt (table) and profile.json next to the build."""
    (out_dir / "profile.txt").write_text(table(rows))
    (out_dir / "profile.json").write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n")
