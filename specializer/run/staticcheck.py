"""Checks before a raw entry runs, for what QEMU's mps2-an386 does not fault on: warnings, one
line each.

* A load or store through a constant null pointer (or a constant offset from null): address 0
  is the board's flash, so QEMU reads the vector table there, and LLVM may treat the access as
  undefined behaviour and drop the code around it. Read from the user's module as written.
* A stack frame larger than the stack: a frame that jumps past the stack's MPU guard lands in
  .bss or below RAM without touching the guard. Frame sizes are read from the compiled code's
  unwind directives (`.save`, `.vsave`, `.pad`: what the prologue pushes and subtracts), which
  LLVM's ARM backend writes for every function, `nounwind` or not.
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm

from specializer.llvm import irtext, module
from specializer.target import TARGET


_ACCESS = {"load": 0, "store": 1, "atomicrmw": 0, "cmpxchg": 0}  # opcode -> pointer operand


def _reached(mod, entry: str) -> list:
    """The functions `entry` may run: those it (or they) call or take the address of."""
    funcs = {f.name: f for f in mod.functions}
    seen, todo = [], [entry]
    while todo:
        f = funcs.get(todo.pop())
        if f is None or f in seen:
            continue
        seen.append(f)
        for b in f.blocks:
            for i in b.instructions:
                todo += [o.name for o in i.operands if o.value_kind == llvm.ValueKind.function]
    return seen


def null_accesses(text: str, where: str, entry: str) -> list[str]:
    """One warning per load/store, in the functions `entry` reaches, whose address is a constant
    null (or null plus a constant)."""
    mod = module.parse(text, where, module.context())
    lines = text.split("\n")
    out = []
    for f in _reached(mod, entry):
        for b in f.blocks:
            for i in b.instructions:
                slot = _ACCESS.get(i.opcode)
                if slot is None:
                    continue
                ptr = list(i.operands)[slot]
                if not (ptr.is_constant and irtext.is_null_based(str(ptr))):
                    continue
                inst = str(i).strip()
                line = _line_of(lines, f.name, inst)
                verb = "loads from" if i.opcode == "load" else "stores to" if i.opcode == "store" else "accesses"
                out.append(f"{where}{f':{line}' if line else ''}: warning: '{f.name}' {verb} a constant null "
                           f"pointer ({inst}): address 0 is {TARGET.board}'s flash, QEMU does not fault there, and "
                           "LLVM may drop the access as undefined behaviour")
    return out


def _line_of(lines: list[str], function: str, inst: str) -> int | None:
    """The 1-based line of `inst` in `function`'s body as written (LLVM prints `, align 4` the
    source may leave out), or None."""
    start = next((n for n, s in enumerate(lines) if irtext.define_name(s) == function), None)
    if start is None:
        return None
    for n in range(start + 1, len(lines)):
        s = lines[n].split(";")[0].strip()
        if s == "}":
            return None
        if s and (inst == s or inst.startswith(s + ",")):
            return n + 1
    return None


_LABEL = re.compile(r"^([A-Za-z_$][\w.$]*):")
_REGS = re.compile(r"^\s*\.(save|vsave)\s*\{([^}]*)\}")
_PAD = re.compile(r"^\s*\.pad\s*#(\d+)")


def _count(regs: str) -> int:
    n = 0
    for r in regs.split(","):
        lo, _, hi = r.strip().partition("-")
        n += int(hi[1:]) - int(lo[1:]) + 1 if hi else 1
    return n


def frame_sizes(asm: str) -> dict[str, int]:
    """Bytes each function's prologue reserves: registers saved (4 each, 8 for a D register) and
    the stack pointer adjustments (`.pad`). Dynamic allocas are not in it."""
    sizes: dict[str, int] = {}
    current = None
    for line in asm.splitlines():
        m = _LABEL.match(line)
        if m and not m.group(1).startswith(".L"):
            current = m.group(1)
            continue
        if current is None:
            continue
        m = _REGS.match(line)
        if m:
            sizes[current] = sizes.get(current, 0) + _count(m.group(2)) * (8 if m.group(1) == "vsave" else 4)
            continue
        m = _PAD.match(line)
        if m:
            sizes[current] = sizes.get(current, 0) + int(m.group(1))
        elif line.strip() == ".fnend":
            current = None
    return sizes


def large_frames(asm: str, stack_bytes: int, where: str) -> list[str]:
    """One warning per function whose frame alone is larger than the stack."""
    return [f"{where}: warning: '{name}' has a stack frame of {size:,} bytes; the stack has {stack_bytes:,} "
            f"({TARGET.board} has {TARGET.ram_bytes >> 20} MiB of RAM): the frame reaches past the stack's guard "
            "into static data or below RAM, where QEMU need not fault"
            for name, size in sorted(frame_sizes(asm).items()) if size > stack_bytes]

