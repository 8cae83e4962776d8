"""Read XLA's text dumps: the scheduled HLO module and its buffer assignment.

Only what capture needs: per computation, its instructions in schedule order (name, shape,
opcode, operands, attributes); per allocation, its size, kind and the values placed in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UserError


@dataclass(frozen=True)
class Instruction:
    name: str
    shape: str
    opcode: str
    operands: tuple[str, ...]
    attrs: str  # the text after the operand list (calls=, index=, metadata=, ...)
    root: bool = False

    def attr(self, key: str) -> str | None:
        m = re.search(r"\b" + re.escape(key) + r'=%?("[^"]*"|[\w.\-]+)', self.attrs)
        return m.group(1).strip('"') if m else None


@dataclass(frozen=True)
class Computation:
    name: str
    entry: bool
    instructions: tuple[Instruction, ...]

    @property
    def root(self) -> Instruction:
        return next(i for i in self.instructions if i.root)

    def get(self, name: str) -> Instruction:
        return next(i for i in self.instructions if i.name == name)


_COMP = re.compile(r"^(ENTRY )?%([\w.\-]+) \(.*\) -> .* \{$")
_INSTR = re.compile(r"^\s+(ROOT )?%([\w.\-]+) = (.+?) ([a-z][\w\-]*)\((.*?)\)(.*)$")


def parse_hlo(text: str) -> dict[str, Computation]:
    comps: dict[str, Computation] = {}
    current, instrs, entry = None, [], False
    for line in text.splitlines():
        m = _COMP.match(line)
        if m:
            current, instrs, entry = m.group(2), [], bool(m.group(1))
            continue
        if current is None:
            continue
        if line.strip() == "}":
            comps[current] = Computation(current, entry, tuple(instrs))
            current = None
            continue
        m = _INSTR.match(line)
        if m:
            operands = tuple(re.findall(r"%([\w.\-]+)", m.group(5)))
            instrs.append(Instruction(m.group(2), m.group(3), m.group(4), operands, m.group(6),
                                      bool(m.group(1))))
    return comps


def entry_computation(comps: dict[str, Computation]) -> Computation:
    return next(c for c in comps.values() if c.entry)


@dataclass(frozen=True)
class Value:
    instruction: str
    index: tuple[int, ...]  # shape index inside a tuple-shaped instruction; () for arrays
    offset: int
    size: int


@dataclass(frozen=True)
class Allocation:
    index: int
    size: int
    kind: str  # parameter | constant | output | temp | thread-local
    parameter: int | None = None
    maybe_live_out: bool = False
    values: tuple[Value, ...] = field(default_factory=tuple)


_ALLOC = re.compile(r"^allocation (\d+): size (\d+), (.*):$")
_VALUE = re.compile(r"^ value: <\d+ ([\w.\-]+)(?:\{([\d,]*)\})?(?: \(phi\))? @\d+> \(size=(\d+),offset=(\d+)\)")


def parse_buffer_assignment(text: str) -> dict[int, Allocation]:
    allocs: dict[int, Allocation] = {}
    cur = None
    for line in text.splitlines():
        m = _ALLOC.match(line)
        if m:
            desc = m.group(3)
            param = re.search(r"\bparameter (\d+)", desc)
            kind = ("parameter" if param else "constant" if "constant" in desc
                    else "thread-local" if "thread-local" in desc
                    else "temp" if "preallocated-temp" in desc else "output")
            cur = Allocation(int(m.group(1)), int(m.group(2)), kind,
                             int(param.group(1)) if param else None, "maybe-live-out" in desc)
            allocs[cur.index] = cur
            continue
        m = _VALUE.match(line)
        if m and cur is not None:
            idx = tuple(int(x) for x in m.group(2).split(",") if x) if m.group(2) else ()
            v = Value(m.group(1), idx, int(m.group(4)), int(m.group(3)))
            cur = Allocation(cur.index, cur.size, cur.kind, cur.parameter, cur.maybe_live_out,
                             cur.values + (v,))
            allocs[cur.index] = cur
        elif line.startswith("Total bytes") or line.startswith("Used values"):
            break
    return allocs


@dataclass(frozen=True)
class Dump:
    directory: Path
    prefix: str  # e.g. module_0000.jit_quad
    hlo: dict[str, Computation]
    allocations: dict[int, Allocation]

    def kernel_ir(self) -> dict[str, Path]:
        """kernel-module IR files (ir-no-opt) of this module by file name."""
        return {p.name: p for p in sorted(self.directory.glob(self.prefix + ".*ir-no-opt.ll"))}


def read_dump(directory: Path) -> Dump:
    """The last jit module in `directory` (capture compiles exactly one)."""
    hlos = sorted(directory.glob("module_*.cpu_after_optimizations.txt"))
    if not hlos:
        raise UserError(f"{directory}: XLA wrote no optimized HLO (did the function compile?)")
    hlo_path = hlos[-1]
    prefix = hlo_path.name[: -len(".cpu_after_optimizations.txt")]
    ba = directory / f"{prefix}.cpu_after_optimizations-buffer-assignment.txt"
    return Dump(directory, prefix, parse_hlo(hlo_path.read_text()),
                parse_buffer_assignment(ba.read_text()))


def locate(allocs: dict[int, Allocation], instruction: str, index: tuple[int, ...] = ()) -> tuple[int, Value]:
    """(allocation, value) holding `instruction{index}`."""
    for a in allocs.values():
        for v in a.values:
            if v.instruction == instruction and v.index == index:
                return a.index, v
    raise KeyError(f"{instruction}{{{','.join(map(str, index))}}}")
