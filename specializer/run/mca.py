"""A second cycle estimate: LLVM's Cortex-M4 scheduling model (llvm-mca) over the executed blocks.

Each translation block the QEMU plugin saw run becomes one llvm-mca code region, its
instructions as llvm-objdump disassembles them from the firmware (UAL, IT conditions shown;
branch targets become a label). A block run e times is simulated for n = min(e, 100)
iterations (rounded down to 1, 2, 4, ..., 64 or 100: one llvm-mca run per n) and costs
TotalCycles * e / n, so a loop body is charged its steady state and code run once its fill
and drain.

What it does not see: each block is simulated alone, so nothing carries over between blocks
(a load feeding the next block's first instruction stalls in neither); a call costs 1 cycle
(`-call-latency=1`; the callee's own blocks are counted where they run); LLVM's Cortex-M4
model issues one instruction per cycle, charges no pipeline refill for a taken branch and no
flash wait states; a line llvm-mca cannot parse (a block entered inside an IT block) is
skipped. The TRM-weighted estimate (cycles.py) stays the reported figure; this one is a
cross-check of it.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from specializer.errors import UserError
from specializer.run.qemu import Block
from specializer.target import TARGET
from specializer.tools import find_tool

MCA = "llvm-mca-19"
OBJDUMP = "llvm-objdump-19"
TRIPLE, CPU = TARGET.triple, TARGET.cpu
ITERATIONS = (1, 2, 4, 8, 16, 32, 64, 100)

_LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S[^\n]*)$")
_TARGET = re.compile(r"^0x[0-9a-f]+$")


def disassembly(elf: Path) -> dict[int, str]:
    """address -> instruction (UAL text llvm-mca can parse) of every executable section."""
    proc = subprocess.run([find_tool(OBJDUMP), "-d", "--no-show-raw-insn", f"--triple={TRIPLE}", f"--mcpu={CPU}",
                           str(elf)], capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        raise UserError(f"{OBJDUMP} could not disassemble {elf}: {proc.stderr.strip().splitlines()[:1]}")
    out = {}
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        text = re.sub(r"\s*<[^>]*>", "", m.group(2).split("@")[0]).strip()  # comments, symbol names
        mnem, _, ops = text.partition("\t")
        ops = ops.strip()
        if mnem.startswith(("b", "cb")) and ops:
            parts = [p.strip() for p in ops.split(",")]
            if _TARGET.match(parts[-1]):
                ops = ", ".join(parts[:-1] + [".Ltarget"])
        out[int(m.group(1), 16)] = f"{mnem} {ops}".strip()
    return out


def _bucket(execs: int) -> int:
    return max(n for n in ITERATIONS if n <= max(execs, 1))


def _run(regions: list[tuple[str, list[str]]], iterations: int) -> dict[str, float]:
    """Region name -> simulated cycles per iteration."""
    src = "".join(f"# LLVM-MCA-BEGIN {name}\n" + "\n".join(insns) + "\n# LLVM-MCA-END\n" for name, insns in regions)
    proc = subprocess.run([find_tool(MCA), f"-mtriple={TRIPLE}", f"-mcpu={CPU}", f"-iterations={iterations}",
                           "-call-latency=1", "-skip-unsupported-instructions=any", "-json", "-"],
                          input=src, capture_output=True, text=True, errors="replace")
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:200])
        raise UserError(f"{MCA} failed on the profile's blocks: {first}")
    out = {}
    for r in json.loads(proc.stdout).get("CodeRegions", []):
        s = r.get("SummaryView", {})
        if s.get("Iterations"):
            out[r["Name"]] = s["TotalCycles"] / s["Iterations"]
    return out


def block_cycles(elf: Path, blocks: tuple[Block, ...]) -> list[float]:
    """llvm-mca's cycles for all executions of each block (0 for a block it could not parse)."""
    code = disassembly(elf)
    by_n: dict[int, list[tuple[str, list[str]]]] = {}
    for k, b in enumerate(blocks):
        insns = [code[i.addr] for i in b.insns if i.addr in code]
        if insns:
            by_n.setdefault(_bucket(b.execs), []).append((f"b{k}", insns))
    per_iter: dict[str, float] = {}
    for n in sorted(by_n):
        per_iter.update(_run(by_n[n], n))
    return [per_iter.get(f"b{k}", 0.0) * b.execs for k, b in enumerate(blocks)]
