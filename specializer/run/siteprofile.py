"""Executed instructions and est. cycles per *site* of the entry (debuginfo.py), call-stack aware.

hloprofile.py charges an instruction by its address alone, so a library function left out of
line that several calls of the entry reach (arm_convolve_s8 called for five layers, a dims clone
shared by calls of one shape) is one row for all of them. Here the run's profile also counts
every block per *context* (qemu.run's ctx, the plugin's `c` lines): the last block run inside
the entry's own code. An instruction is charged

  1. to the site its DWARF line names, when it has one (model code, inlined or not);
  2. else, when it lies in a model function, to that function's site;
  3. else (library code, out of line) to the site of its context's last instruction: the call
     of the entry that led to it (inlined kernel code calling a library function has its
     kernel's line there, so the call counts for that kernel).

Each block's TRM-weighted cost (cycles.py) is split over its contexts exactly: the per-context
costs are the same formula on the context's executions and taken branches, and the one term that
is not linear (a fall-through predecessor's pipelining, a cycle at most per execution) goes to
the context with the most executions. The sites then add up to the run's figures.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, replace
from pathlib import Path

from specializer.run.cycles import fallthrough, insn_costs
from specializer.run.debuginfo import Site
from specializer.run.hloprofile import line_ranges
from specializer.run.qemu import Profile
from specializer.run.symbols import functions


class Untrusted(Exception):
    """The profile cannot be split per site (its contexts do not add up to its blocks)."""


@dataclass(frozen=True)
class SiteCost:
    site: int  # the site's line (0: none: code run before any entry block, should not happen)
    insns: int
    cycles: int


def per_site(elf: Path, profile: Profile, sites: list[Site], of_fn: dict[str, int],
             file_name: str) -> dict[int, list[int]]:
    """site line -> [instructions, est. cycles]; the values add up to the profile's."""
    if not profile.contexts:
        raise Untrusted("the run was not profiled per context")
    ranges = line_ranges(elf, file_name)
    starts = [r[0] for r in ranges]
    funcs = functions(elf)
    fstarts = [f[0] for f in funcs]
    lines = {s.line for s in sites}

    def line_at(addr: int) -> int:
        i = bisect.bisect_right(starts, addr) - 1
        return ranges[i][2] if i >= 0 and addr < ranges[i][1] else 0

    def function_at(addr: int) -> str:
        i = bisect.bisect_right(fstarts, addr) - 1
        return funcs[i][2] if i >= 0 and addr < funcs[i][0] + funcs[i][1] else ""

    def own(addr: int) -> int | None:
        line = line_at(addr)
        if line in lines:
            return line
        return of_fn.get(function_at(addr))

    blocks = {(b.addr, len(b.insns)): b for b in profile.blocks}
    ctx_site: dict[tuple[int, int], int] = {}
    for c in profile.contexts:
        key = (c.ctx, c.ctx_insns)
        if key not in ctx_site:
            cb = blocks.get(key)
            ctx_site[key] = (own(cb.insns[-1].addr) or 0) if cb is not None and cb.insns else 0
    by_block: dict[tuple[int, int], list] = {}
    for c in profile.contexts:
        by_block.setdefault((c.addr, c.ninsns), []).append(c)
    into = fallthrough(profile)
    acc: dict[int, list[int]] = {}
    for key, b in blocks.items():
        cs = by_block.get(key, [])
        if sum(c.execs for c in cs) != b.execs or sum(c.taken for c in cs) != b.taken:
            raise Untrusted(f"block 0x{b.addr:x}: its contexts count {sum(c.execs for c in cs)} of "
                            f"{b.execs} executions")
        whole = insn_costs(b, into.get(b.addr))
        parts = [insn_costs(replace(b, execs=c.execs, taken=c.taken)) for c in cs]
        if parts:  # the non-linear rest (fall-through pipelining) to the context run most
            most = max(range(len(cs)), key=lambda k: cs[k].execs)
            for j in range(len(whole)):
                parts[most][j] += whole[j] - sum(p[j] for p in parts)
        owners = [own(i.addr) for i in b.insns]
        for c, costs in zip(cs, parts):
            fallback = ctx_site[(c.ctx, c.ctx_insns)]
            for owner, cost in zip(owners, costs):
                a = acc.setdefault(fallback if owner is None else owner, [0, 0])
                a[0] += c.execs
                a[1] += cost
    return acc
