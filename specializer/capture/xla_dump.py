"""Read XLA's text dump of the scheduled HLO module.

Only what capture needs: per computation, its instructions in schedule order (name, shape,
opcode, operands, attributes). Buffers come from the serialized executable (xla_executable).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from specializer.errors import UserError


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
class Dump:
    directory: Path
    prefix: str  # e.g. module_0000.jit_quad
    hlo: dict[str, Computation]

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
    return Dump(directory, prefix, parse_hlo(hlo_path.read_text()))

