"""Which of the model's calls the all-args build should specialize shape-only, chosen by measurement.

all-args clones a kernel for every distinct set of constant arguments, buffer addresses and
weights included; dims (Glow's default) clones it per shape only, so two layers of one shape
share a clone. Usually the per-address clone is as fast or faster, but not always: constant
addresses change LLVM's register allocation and scheduling, and the int8 conv with constant
per-channel parameters (relayout.py) unrolls its channel loop, which on a 64-channel layer costs
more than it saves. So after both variants have run, each of the model's calls (callsites.py) is
costed in each: the est. cycles per execution of the function the call calls in specialized.ll
(where the call still carries its number: O2's dead-argument elimination drops it, but keeps the
function's name), as measured in the optimized module, with what that function calls (a function called from several places is split
among its callers by their entries; functions that are not in the IR, libc's, are not charged).
The calls dims ran faster become all-args' `shape_only` set (specialized by dims' rule and left
out of relayout), and the comparison builds and measures all-args once more with it, keeping
whichever build measured fewer est. cycles. A call inlined away in either build has no cost of
its own and stays as all-args has it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specializer.llvm import irtext
from specializer.optimize import callsites


@dataclass(frozen=True)
class CallCost:
    call: int  # the model's call number
    callee: str  # the function it calls in the optimized module
    cycles: float  # est. cycles per execution, with what the callee calls


def call_costs(specialized: str, optimized: str, profile: list[dict]) -> dict[int, CallCost]:
    """The cost of each of the model's calls of `specialized` (a build's specialized.ll text) whose
    callee is still a function of `optimized` (its optimized.ll) and ran, from that build's
    per-function profile (profile.json rows: name, cycles, calls)."""
    own = {r["name"]: r["cycles"] for r in profile}
    entries = {r["name"]: r["calls"] for r in profile}
    edges = callsites.calls(optimized)
    callees: dict[str, list[str]] = {}
    callers: dict[str, set[str]] = {}
    for caller, callee, _ in edges:
        callees.setdefault(caller, [])
        if callee not in callees[caller]:
            callees[caller].append(callee)
        callers.setdefault(callee, set()).add(caller)
    memo: dict[str, float] = {}

    def total(f: str, busy: frozenset = frozenset()) -> float:
        """f's own est. cycles plus its share of everything it calls."""
        if f in memo:
            return memo[f]
        t = float(own.get(f, 0))
        for g in callees.get(f, ()):
            if g in busy or g == f:
                continue  # recursion: charged once, to itself
            weight = sum(entries.get(c, 0) for c in callers[g])
            share = entries.get(f, 0) / weight if weight else 1 / len(callers[g])
            t += share * total(g, busy | {f})
        memo[f] = t
        return t

    defined = set(irtext.defined(optimized))
    out: dict[int, CallCost] = {}
    for _, callee, n in callsites.calls(specialized):
        if n is None:
            continue
        runs = entries.get(callee, 0)
        if n in out or callee not in defined or not runs:
            # duplicated (an unrolled loop), inlined away, or renamed by O2: no cost of its own
            out[n] = CallCost(n, callee, float("nan"))
            continue
        out[n] = CallCost(n, callee, total(callee) / runs)
    return {n: c for n, c in out.items() if c.cycles == c.cycles}


def read(build_dir: Path) -> dict[int, CallCost]:
    """`call_costs` of a measured build directory (specialized.ll, optimized.ll, profile.json)."""
    return call_costs((build_dir / "specialized.ll").read_text(), (build_dir / "optimized.ll").read_text(),
                      json.loads((build_dir / "profile.json").read_text()))


def choose(dims: dict[int, CallCost], all_args: dict[int, CallCost]) -> frozenset:
    """The calls that cost fewer est. cycles in the dims build than in the all-args build."""
    return frozenset(n for n, c in all_args.items() if n in dims and dims[n].cycles < c.cycles)
