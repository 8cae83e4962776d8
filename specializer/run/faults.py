"""What the harness's fault handler printed, as one line a person can act on.

The handler (harness.c, harness_report_fault) prints the raw registers:
``fault <exception> <pc> <cfsr> <hfsr> <mmfar> <bfar> <psp>`` (pc 0xffffffff when the exception
frame could not be stacked) or ``limit <pc>`` when the instruction limit's timer fired. Here they
are decoded (ARMv7-M ARM B3.2.15-B3.2.18: CFSR = MMFSR | BFSR << 8 | UFSR << 16, HFSR, MMFAR,
BFAR) and the PC is resolved to a function + offset from the ELF's symbols.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile

from specializer.run.symbols import functions
from specializer.target import TARGET

_FAULT = re.compile(r"^fault" + r" 0x([0-9a-f]{8})" * 7 + r"\s*$", re.M)
_LIMIT = re.compile(r"^limit 0x([0-9a-f]{8})\s*$", re.M)
NO_PC = 0xFFFFFFFF

# CFSR bit -> (fault class, what happened); the address register a bit makes valid is read apart
_CFSR = {
    0: ("MemManage", "instruction fetch from a no-access or execute-never region"),
    1: ("MemManage", "data access violation"),
    3: ("MemManage", "unstacking on exception return"),
    4: ("MemManage", "stacking the exception frame"),
    5: ("MemManage", "lazy FP state preservation"),
    8: ("BusFault", "instruction fetch bus error"),
    9: ("BusFault", "precise data bus error"),
    10: ("BusFault", "imprecise data bus error"),
    11: ("BusFault", "bus error unstacking on exception return"),
    12: ("BusFault", "bus error stacking the exception frame"),
    13: ("BusFault", "bus error in lazy FP state preservation"),
    16: ("UsageFault", "undefined instruction"),
    17: ("UsageFault", "invalid state (a branch to an address without the Thumb bit: a bad function pointer?)"),
    18: ("UsageFault", "invalid exception return"),
    19: ("UsageFault", "coprocessor access (the FPU is off?)"),
    24: ("UsageFault", "unaligned access (LDRD/STRD/LDM/STM need word alignment)"),
    25: ("UsageFault", "integer division by zero"),
}
MMARVALID, BFARVALID = 1 << 7, 1 << 15
STACKING = (1 << 4) | (1 << 12)  # MSTKERR, STKERR
DACCVIOL = 1 << 1
HFSR_VECTTBL = 1 << 1


@dataclass(frozen=True)
class Fault:
    exception: int  # IPSR: 2 NMI, 3 HardFault, 4 MemManage, 5 BusFault, 6 UsageFault
    pc: int | None  # None: the frame could not be stacked
    cfsr: int
    hfsr: int
    mmfar: int
    bfar: int
    psp: int


def parse(stdout: str) -> Fault | None:
    m = _FAULT.search(stdout)
    if not m:
        return None
    exc, pc, cfsr, hfsr, mmfar, bfar, psp = (int(g, 16) for g in m.groups())
    return Fault(exc, None if pc == NO_PC else pc, cfsr, hfsr, mmfar, bfar, psp)


@dataclass(frozen=True)
class Limit:
    pc: int | None  # where the instruction limit stopped the call (None: the frame was not stacked)


def parse_limit(stdout: str) -> Limit | None:
    m = _LIMIT.search(stdout)
    if not m:
        return None
    pc = int(m.group(1), 16)
    return Limit(None if pc == NO_PC else pc)


@dataclass(frozen=True)
class Layout:
    """What the ELF says: functions (start, end, name) and the stack's bounds (firmware.py)."""
    functions: tuple[tuple[int, int, str], ...]
    guard: tuple[int, int]  # the MPU guard region [lo, hi)
    stack: tuple[int, int]  # [__stack_limit, __stack_top)
    ram_origin: int

    def where(self, pc: int) -> str:
        """`f+0x1c`, or '' when no function holds pc."""
        for lo, hi, name in self.functions:
            if lo <= pc < hi:
                return f"{name}+0x{pc - lo:x}"
        return ""


def layout(elf: Path) -> Layout:
    with open(elf, "rb") as f:
        syms = {s.name: s["st_value"] for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    funcs = tuple((lo, lo + size, name) for lo, size, name in functions(elf))  # as the profile names them
    guard = syms.get("__stack_guard", 0)
    return Layout(funcs, (guard, syms.get("__stack_limit", guard)),
                  (syms.get("__stack_limit", 0), syms.get("__stack_top", 0)), TARGET.ram_origin)


def at(pc: int | None, lay: Layout) -> str:
    if pc is None:
        return "PC unknown (the exception frame could not be stacked)"
    where = lay.where(pc)
    return f"PC 0x{pc:08x}" + (f" in {where}" if where else "")


def overflowed(fault: Fault, lay: Layout) -> bool:
    """The stack ran into the guard (a push or the exception frame), or past it."""
    lo, hi = lay.guard
    if fault.cfsr & MMARVALID and fault.cfsr & DACCVIOL and lo <= fault.mmfar < hi:
        return True
    return bool(fault.cfsr & STACKING) and fault.psp < hi


def describe(fault: Fault, lay: Layout) -> str:
    """One line: a stack overflow with the sizes, or the fault class, what happened, and where."""
    if not lay.stack[0] <= fault.psp < lay.stack[1]:
        # the frame went below the guard (below RAM, QEMU's writes vanish and reads give 0): its PC is junk
        fault = dataclasses.replace(fault, pc=None)
    if overflowed(fault, lay):
        size = lay.stack[1] - lay.stack[0]
        below = lay.stack[0] - lay.ram_origin
        where = f" (at {at(fault.pc, lay)})" if fault.pc is not None else ""
        return (f"stack overflow: the call needs more than the {size:,} bytes of stack there are{where}; "
                f"{TARGET.board} has {(lay.stack[1] - lay.ram_origin) >> 20} MiB of RAM and {below:,} bytes of it "
                "hold .data, .bss, the fault handlers' stack and the stack's guard")
    if fault.exception == 2:
        return f"NMI at {at(fault.pc, lay)}"
    reasons, kind = [], None
    for bit, (cls, what) in _CFSR.items():
        if fault.cfsr >> bit & 1:
            kind = kind or cls
            if bit == 1 and fault.cfsr & MMARVALID:
                what += f" at address 0x{fault.mmfar:08x}"
            if bit == 9 and fault.cfsr & BFARVALID:
                what += f" at address 0x{fault.bfar:08x}"
            reasons.append(what)
    if fault.hfsr & HFSR_VECTTBL:
        kind, reasons = kind or "HardFault", reasons + ["bus error reading the vector table"]
    detail = f"{kind or 'HardFault'}: {'; '.join(reasons) or 'no fault status recorded'}"
    return f"hard fault at {at(fault.pc, lay)} ({detail})"
