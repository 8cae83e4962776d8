"""The profile tied to the model: executed instructions and est. cycles per kernel and HLO op.

The build carries line-table debug info (debuginfo.py): each line of the synthetic file
`<model>.hlo` is a site (the entry's own code, an XLA kernel, a library call of the entry).
Every instruction the QEMU plugin saw run is charged, by its address, to the site the ELF's
DWARF line table gives it, so kernel code inlined into the entry still counts for its kernel;
an address with no line (line 0, or a library function left out of line) is charged to the
function symbol around it, a model function's to that function's site. A library function's
row names the HLO instructions whose code called it (calls seen in the profile: `bl` and tail
branches to a function's first instruction, followed through library callers). The cycles of
an instruction are its TRM-weighted cost (cycles.py; a block's taken-branch penalty is its
last instruction's), so the rows add up to the run's figures.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile

from specializer.run.cycles import fallthrough, insn_costs
from specializer.run.debuginfo import Site
from specializer.capture.hlo_sites import HloMap, HloOp
from specializer.run.profile import UNKNOWN
from specializer.run.symbols import functions
from specializer.run.qemu import Profile


@dataclass(frozen=True)
class Row:
    kernel: str  # the XLA kernel, the library function a call of the entry runs, the entry, or a library function
    kind: str  # kernel | call (a library call of the entry, inlined or not) | entry | library
    hlo: tuple[str, ...]  # HLO instructions it runs (library: the ones whose code called it)
    op_name: str  # XLA's op_name of the first of them
    source: str  # file:line JAX recorded for it
    insns: int
    cycles: int  # TRM-weighted
    mca_cycles: int | None = None  # llvm-mca's estimate (mca.py), when asked for


def line_ranges(elf: Path, file_name: str) -> list[tuple[int, int, int]]:
    """(start, end, line) address ranges of `file_name`'s lines in the ELF's DWARF line table,
    sorted. Sequences of functions the linker dropped (relocated to address 0) are left out."""
    out = []
    with open(elf, "rb") as f:
        e = ELFFile(f)
        if not e.has_dwarf_info():
            return []
        dw = e.get_dwarf_info()
        for cu in dw.iter_CUs():
            lp = dw.line_program_for_CU(cu)
            if lp is None:
                continue
            names = {i + (0 if lp.header["version"] >= 5 else 1): fe.name.decode(errors="replace")
                     for i, fe in enumerate(lp["file_entry"])}
            seq: list = []
            for entry in lp.get_entries():
                st = entry.state
                if st is None:
                    continue
                seq.append(st)
                if not st.end_sequence:
                    continue
                if seq[0].address != 0:
                    for a, b in zip(seq, seq[1:]):
                        if b.address > a.address and names.get(a.file) == file_name:
                            out.append((a.address, b.address, a.line))
                seq = []
    return sorted(out)


def _lookup(ranges: list[tuple[int, int, int]], starts: list[int], addr: int) -> int:
    i = bisect.bisect_right(starts, addr) - 1
    return ranges[i][2] if i >= 0 and addr < ranges[i][1] else 0


_CALL = re.compile(r"^(bl|b|b\.w)\s+#0x([0-9a-f]+)$")


def attribute(elf: Path, profile: Profile, sites: list[Site], of_fn: dict[str, int], file_name: str,
              block_mca: list[float] | None = None) -> dict:
    """key -> [insns, cycles, mca cycles] plus call edges; a key is ("site", line) or ("fn", symbol)."""
    ranges = line_ranges(elf, file_name)
    starts = [r[0] for r in ranges]
    funcs = functions(elf)
    fstarts = [f[0] for f in funcs]
    lines = {s.line for s in sites}

    def function_at(addr: int) -> tuple[int, int, str]:
        i = bisect.bisect_right(fstarts, addr) - 1
        return funcs[i] if i >= 0 and addr < funcs[i][0] + funcs[i][1] else (-1, 0, UNKNOWN)

    def key(addr: int) -> tuple:
        line = _lookup(ranges, starts, addr)
        if line in lines:
            return ("site", line)
        name = function_at(addr)[2]
        return ("site", of_fn[name]) if name in of_fn else ("fn", name)

    acc: dict[tuple, list[float]] = {}
    edges: dict[str, set[tuple]] = {}  # library function -> keys of the code that called it
    into = fallthrough(profile)
    for n, b in enumerate(profile.blocks):
        costs = insn_costs(b, into.get(b.addr))
        keys = [key(i.addr) for i in b.insns]
        weight = sum(costs) or 1
        for i, k, c in zip(b.insns, keys, costs):
            a = acc.setdefault(k, [0, 0, 0.0])
            a[0] += b.execs
            a[1] += c
            if block_mca is not None:
                a[2] += block_mca[n] * c / weight  # a block's llvm-mca cycles split as its TRM costs
        last = b.insns[-1] if b.insns else None
        m = _CALL.match(last.text.strip()) if last else None
        if m:
            target = int(m.group(2), 16)
            start, _, name = function_at(target)
            own = function_at(last.addr)[2]
            if start == target and name not in of_fn and (m.group(1) == "bl" or name != own):
                edges.setdefault(name, set()).add(keys[-1])
    return {"acc": acc, "edges": edges}


def _callers(name: str, edges: dict, hlo_of: dict[int, tuple[str, ...]]) -> tuple[str, ...]:
    seen, todo, out = {name}, [name], []
    while todo:
        for kind, v in sorted(edges.get(todo.pop(0), ()), key=str):
            if kind == "site":
                out += [h for h in hlo_of[v] if h not in out]
            elif v not in seen:
                seen.add(v)
                todo.append(v)
    return tuple(out)


def rows(attributed: dict, sites: list[Site], hlo: HloMap | None, mca: bool = False) -> list[Row]:
    """Profile rows, most est. cycles first (ties by kernel)."""
    by_line = {s.line: s for s in sites}
    hlo_of = {s.line: s.hlo for s in sites}
    ops = hlo.ops if hlo else {}
    acc = {k: list(v) for k, v in attributed["acc"].items()}
    for (kind, v) in sorted(acc, key=str):
        # a library function called out of line by one call of the entry, and by nothing else, is that call
        callers = attributed["edges"].get(v, set()) if kind == "fn" else set()
        if len(callers) == 1:
            (ck, cv), = callers
            if ck == "site" and by_line[cv].call and by_line[cv].kernel == v:
                into = acc.setdefault((ck, cv), [0, 0, 0.0])
                for j, x in enumerate(acc.pop((kind, v))):
                    into[j] += x
    out = []
    for (kind, v), (insns, cyc, mca_cyc) in acc.items():
        if kind == "site":
            s = by_line[v]
            names = s.hlo
            what = "entry" if v == 1 else "call" if s.call else "kernel"
            kernel = s.kernel
        else:
            names = _callers(v, attributed["edges"], hlo_of)
            what, kernel = "library", v
        first = next((ops[n] for n in names if n in ops), None)
        out.append(Row(kernel, what, names, first.op_name if first else "", first.source if first else "",
                       int(insns), int(cyc), round(mca_cyc) if mca else None))
    return sorted(out, key=lambda r: (-r.cycles, r.kernel, r.hlo))


def as_json(rs: list[Row], hlo: HloMap | None) -> str:
    """Every row whole, with the HLO instructions it names (opcode, shape, fused instructions)."""
    ops = hlo.ops if hlo else {}

    def op(name: str) -> dict:
        o: HloOp | None = ops.get(name)
        return asdict(o) if o else {"name": name}

    return json.dumps([asdict(r) | {"hlo": [op(n) for n in r.hlo]} for r in rs], indent=1) + "\n"


@dataclass(frozen=True)
class Profiled:
    row: object  # measure.Row of the run
    rows: list[Row]
    hlo: HloMap | None  # None: captured before hlo.json existed (rows name kernels, not HLO)
