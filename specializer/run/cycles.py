"""Cortex-M4 cycle estimate: QEMU-counted instructions weighted by the TRM's costs.

QEMU models no timing, so this is an estimate, reported as "QEMU-counted instructions,
TRM-weighted cycle estimate". Each executed instruction costs its class's cycles from the
Cortex-M4 TRM (Table 3-1, processor instructions; Table 7-1, FPU instructions), zero wait
states; `COSTS` is the table (docs/cost-model.md prints it). A branch adds P = 2 (pipeline refill; the
TRM gives 1-3) when it is taken.

Load/store pipelining, per the TRM's load/store timings (section 3.3.2): a single load or store
right after a single load costs one cycle less, unless the first load's
destination is an address register of the second; a store with an immediate (or no) offset
costs 1, since its data phase overlaps the next instruction; nothing pipelines after a store, or
with LDRD/STRD, LDM/STM. The FPU's VLDR/VSTR go through the same load/store unit and are
charged the same way. Stalls (an address computed by the previous instruction, a load result
used at once) are not modelled. "Right after" crosses QEMU's block splits that are no branch (a
1 KiB page, a full block): a block entered by falling through from a block that ends in a load
pairs with that load, for as many executions as fell through (`fallthrough`). Without that the
estimate of the same code moved to another address changed (a 4440-byte clone of anomaly_ae: 192
est. cycles per call).

Taken-ness comes from the block's last instruction, decoded from its disassembly: QEMU ends a
translation block at every branch, but also elsewhere (a 32-bit instruction crossing a 1 KiB
page, a full block), so "the next block is not the fall-through" alone is no taken branch.
- not a branch (does not write the PC): never taken;
- an unconditional branch (B, BL, BLX, BX, TBB/TBH, POP/LDM with PC, LDR PC, MOV/ADD PC):
  taken every time, even to the next address (the pipeline is refilled all the same);
- a conditional branch (B<cond>, CBZ/CBNZ, or a PC write inside an IT block): taken as often
  as the plugin saw the next block start elsewhere than at the branch's fall-through.
IT folds into a preceding 16-bit instruction of the same block (0 cycles), else costs 1.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from specializer.run.qemu import Block, Insn, Profile

BRANCH_PENALTY = 2  # P
_REGLIST = re.compile(r"\{([^}]*)\}")
CONDS = frozenset("eq ne cs hs cc lo mi pl vs vc hi ls ge lt gt le".split())


@dataclass(frozen=True)
class Cost:
    klass: str  # the TRM's instruction class
    forms: str  # mnemonics it covers (as QEMU's disassembler prints them)
    cycles: str  # the TRM's cycles, N = registers in the list (a D register counts 2), P = refill
    model: str  # what the estimate charges


# The cost table, first match wins (order matters: VLDM before VLDR, LDRD before LDR).
COSTS = (
    Cost("load/store multiple, push/pop", "LDM, STM, PUSH, POP, VLDM, VSTM, VPUSH, VPOP", "1+N", "1+N"),
    Cost("load/store double", "LDRD, STRD, VLDR.64, VSTR.64", "1+N", "3"),
    Cost("load (any width, exclusive)", "LDR*, VLDR", "2, 1 pipelined after a load",
         "2; 1 right after a single load whose destination is not in its address"),
    Cost("store (any width, exclusive)", "STR*, VSTR", "2; 1 with an immediate offset or pipelined",
         "1 with an immediate or no offset; register offset: 2, 1 right after a single load"),
    Cost("table branch", "TBB, TBH", "2+P", "2+P"),
    Cost("divide", "SDIV, UDIV", "2-12", "7 (the middle)"),
    Cost("FP divide, square root", "VDIV, VSQRT", "14", "14"),
    Cost("FP multiply-accumulate (chained and fused)",
         "VMLA, VMLS, VNMLA, VNMLS, VFMA, VFMS, VFNMA, VFNMS", "3", "3"),
    Cost("FP move of two core registers", "VMOV Rt, Rt2, Dm / Sm, Sm1 (and back)", "2", "2"),
    Cost("if-then", "IT", "1, or 0 folded into a preceding 16-bit instruction",
         "0 after a 16-bit instruction of the same block, else 1"),
    Cost("branch", "B, BL, BLX, BX, CBZ, CBNZ; MOV/ADD/LDR/POP/LDM writing PC", "1+P taken, 1 not taken",
         "1 (+P when taken; LDR/POP/LDM: their load cost +P)"),
    Cost("everything else", "MOV, ADD, SUB, logic, shifts, compare, MUL, MLA, MLS, long multiply, SIMD, "
         "saturating, bit field, extend; VADD, VSUB, VMUL, VNMUL, VABS, VNEG, VCVT, VCMP, VMOV, VMRS; "
         "DMB/DSB/ISB", "1 (barriers 1+B)", "1"),
)


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


@functools.lru_cache(maxsize=1 << 16)  # a profile repeats its instructions' texts (a million calls per comparison)
def _split(text: str) -> tuple[str, str]:
    """(base mnemonic without .w/.f32 suffixes, lower case; operands)."""
    mnem, _, ops = text.strip().partition(" ")
    return mnem.lower().split(".")[0], ops.strip().lower()


def _registers(ops: str) -> list[str]:
    m = _REGLIST.search(ops)
    return [r.strip() for r in m.group(1).split(",")] if m else []


def _is_it(base: str) -> bool:
    return base.startswith("it") and len(base) <= 5 and set(base[2:]) <= {"t", "e"}


def insn_cycles(text: str) -> int:
    """Cycles of one instruction from its disassembly (taken-branch penalty and IT folding excluded)."""
    base, ops = _split(text)
    if base.startswith(("vldm", "vstm", "vpush", "vpop", "ldm", "stm", "push", "pop")):
        return 1 + _list_words(ops)
    if base in ("ldrd", "strd") or base in ("vldr", "vstr") and ops.startswith("d"):
        return 3  # two words: 1+N (VLDR.64 / VSTR.64 as LDRD / STRD)
    if base.startswith(("ldr", "str", "vldr", "vstr")):
        return 2
    if base in ("tbb", "tbh"):
        return 2
    if base in ("sdiv", "udiv"):
        return 7
    if base in ("vdiv", "vsqrt"):
        return 14
    if base in ("vmla", "vmls", "vfma", "vfms", "vnmla", "vnmls", "vfnma", "vfnms"):
        return 3
    if base == "vmov" and len(ops.split(",")) >= 3:  # to or from two core registers
        return 2
    return 1


NONE, ALWAYS, COND = "none", "always", "cond"


def branch_kind(text: str, in_it: bool = False) -> str:
    """Whether an instruction branches: never (NONE), every time (ALWAYS) or on a condition (COND).
    in_it: the instruction is inside an IT block (QEMU's disassembly does not show its condition)."""
    base, ops = _split(text)
    first = ops.split(",")[0].strip()
    if base in ("cbz", "cbnz"):
        return COND
    if base in ("b", "bl", "blx", "bx", "tbb", "tbh"):
        kind = ALWAYS
    elif base[:1] == "b" and base[1:] in CONDS or base[:2] == "bx" and base[2:] in CONDS \
            or base[:3] == "blx" and base[3:] in CONDS or base[:2] == "bl" and base[2:] in CONDS:
        return COND
    elif base.startswith(("pop", "ldm")) and "pc" in _registers(ops):
        kind = ALWAYS
    elif first == "pc" and not base.startswith(("cmp", "cmn", "tst", "teq", "str", "push", "stm")):
        kind = ALWAYS  # LDR pc, MOV pc, ADD pc, ...
    else:
        return NONE
    return COND if in_it else kind


def _it_covered(block: Block) -> list[bool]:
    """Per instruction of the block: inside an IT block that starts in this block."""
    covered, left = [], 0
    for i in block.insns:
        covered.append(left > 0)
        left = max(left - 1, 0)
        base, _ = _split(i.text)
        if _is_it(base):
            left = len(base) - 1
    return covered


def taken(block: Block) -> int:
    """How often the block's last instruction was a taken branch."""
    if not block.insns:
        return 0
    kind = branch_kind(block.insns[-1].text, _it_covered(block)[-1])
    if kind == ALWAYS:
        return block.execs
    if kind == COND:
        return min(block.taken, block.execs)  # the plugin's count of non-fall-through successors
    return 0


_ADDRESS = re.compile(r"\[([^\]]*)\]")


def _single(base: str) -> str | None:
    """'load' or 'store' for a single load/store (not LDRD/STRD, not multiple), else None."""
    if base.startswith(("ldrd", "strd", "ldm", "stm", "vldm", "vstm")):
        return None
    if base.startswith(("ldr", "vldr")):
        return "load"
    if base.startswith(("str", "vstr")):
        return "store"
    return None


def _address_registers(ops: str) -> set[str]:
    m = _ADDRESS.search(ops)
    return {r.strip() for r in m.group(1).split(",") if re.fullmatch(r"\s*(r\d+|sp|lr|ip|fp|sl|sb)\s*", r)} if m else set()


def _memory_cycles(text: str, prev: str | None) -> int | None:
    """Cycles of a single load/store with the TRM's pipelining (None: not a single load/store).
    prev: the previous instruction of the same block."""
    base, ops = _split(text)
    kind = _single(base) if not (base in ("vldr", "vstr") and ops.startswith("d")) else None
    if kind is None or ops.split(",")[0].strip() == "pc":  # LDR PC is a branch: blocking
        return None
    regs = _address_registers(ops)
    reg_offset = len(regs) > 1  # [Rn, Rm{, lsl #n}] (a literal load prints as [pc, #n])
    after_load = False
    if prev is not None:
        pbase, pops = _split(prev)
        pdest = pops.split(",")[0].strip()
        after_load = _single(pbase) == "load" and pdest[:1] != "d" and pdest != "pc" and pdest not in regs
    if kind == "store" and not reg_offset:
        return 1
    return 1 if after_load else 2


def _one(i: Insn, prev: Insn | None) -> int:
    """Cycles of one execution of `i` right after `prev` (None: after a branch, or first)."""
    return _after(i.text, None if prev is None else prev.text, prev is not None and prev.size == 2)


@functools.lru_cache(maxsize=1 << 16)  # a function of the two texts: the same pairs recur in every profile
def _after(text: str, prev: str | None, prev_16bit: bool) -> int:
    if _is_it(_split(text)[0]):
        return 0 if prev_16bit else 1  # folds into a 16-bit predecessor
    mem = _memory_cycles(text, prev)
    return insn_cycles(text) if mem is None else mem


def fallthrough(profile: Profile) -> dict[int, tuple[Insn, int]]:
    """Block address -> (the instruction just before it, executions that reached the block from
    it without a branch), for blocks QEMU split where no branch is (the only way one block runs
    straight into the next). Blocks overlap when a branch enters the middle of straight code;
    those that end at the same address end with the same instruction, so their counts add."""
    into: dict[int, tuple[Insn, int]] = {}
    for b in profile.blocks:
        if not b.insns or branch_kind(b.insns[-1].text, _it_covered(b)[-1]) != NONE:
            continue
        last = b.insns[-1]
        end = last.addr + last.size
        into[end] = (last, into.get(end, (last, 0))[1] + b.execs)
    return into


def insn_costs(block: Block, into: tuple[Insn, int] | None = None) -> list[int]:
    """Estimated cycles of each instruction of a translation block over all its executions; the
    taken-branch penalty is the last instruction's (the profile splits a block by address).
    `into`: the instruction the block follows without a branch and how often (`fallthrough`)."""
    costs = []
    prev = None
    for i in block.insns:
        costs.append(block.execs * _one(i, prev))
        prev = i
    if costs and into is not None:
        before, n = into
        n = min(n, block.execs)
        costs[0] += n * (_one(block.insns[0], before) - _one(block.insns[0], None))
    if costs:
        costs[-1] += taken(block) * BRANCH_PENALTY
    return costs


def block_cycles(block: Block, into: tuple[Insn, int] | None = None) -> int:
    """Estimated cycles of all executions of one translation block (`into`: see insn_costs)."""
    return sum(insn_costs(block, into))


@dataclass(frozen=True)
class Estimate:
    insns: int
    cycles: int


def estimate(profile: Profile) -> Estimate:
    into = fallthrough(profile)
    return Estimate(profile.insns, sum(block_cycles(b, into.get(b.addr)) for b in profile.blocks))
