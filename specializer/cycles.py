"""Cortex-M4 cycle estimate: QEMU-counted instructions weighted by the TRM's costs.

QEMU models no timing, so this is an estimate, reported as "QEMU-counted instructions,
TRM-weighted cycle estimate". Costs (Cortex-M4 TRM, no load pipelining assumed):
LDR/STR/VLDR/VSTR 2; LDRD/STRD 3; LDM/STM/PUSH/POP/VLDM/VSTM/VPUSH/VPOP 1+N;
MUL/MLA/SMLAD... 1; SDIV/UDIV 7 (the TRM gives 2-12; the middle is used); VMLA/VFMA 3;
VDIV/VSQRT 14; everything else 1; a taken branch adds P = 2 (pipeline refill).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .qemu import Profile

BRANCH_PENALTY = 2
_REGLIST = re.compile(r"\{([^}]*)\}")


def _list_words(text: str) -> int:
    m = _REGLIST.search(text)
    if not m:
        return 1
    n = 0
    for item in m.group(1).split(","):
        item = item.strip()
        width = 2 if item.startswith("d") else 1
        if "-" in item:
            a, b = item.split("-")
            n += (int(re.sub(r"\D", "", b)) - int(re.sub(r"\D", "", a)) + 1) * width
        elif item:
            n += width
    return n


def insn_cycles(text: str) -> int:
    """Cycles of one instruction from its disassembly (taken-branch penalty excluded)."""
    mnem = text.split()[0].lower() if text.split() else ""
    base = mnem.split(".")[0]
    if base.startswith(("vldm", "vstm", "vpush", "vpop", "ldm", "stm", "push", "pop")):
        return 1 + _list_words(text)
    if base.startswith(("ldrd", "strd")):
        return 3
    if base.startswith(("ldr", "str", "vldr", "vstr")):
        return 2
    if base.startswith(("sdiv", "udiv")):
        return 7
    if base.startswith(("vdiv", "vsqrt")):
        return 14
    if base.startswith(("vmla", "vmls", "vfma", "vfms", "vnmla", "vnmls", "vfnma", "vfnms")):
        return 3
    return 1


@dataclass(frozen=True)
class Estimate:
    insns: int
    cycles: int


def estimate(profile: Profile) -> Estimate:
    cycles = 0
    for b in profile.blocks:
        cycles += b.execs * sum(insn_cycles(i.text) for i in b.insns) + b.taken * BRANCH_PENALTY
    return Estimate(profile.insns, cycles)
