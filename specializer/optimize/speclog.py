"""What a specialization did: its call sites, the clones it made and their names, and its log.

A clone is named `<callee>.spec.<hash>`; the hash is of the original function and every
constant fixed at its parameter positions (`clone_name`), so a clone keeps its name when other
call sites come or go, and a clone's clone is named as the original with all its constants.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass

from specializer.llvm.irtext import quote

HASH_DIGITS = 8
# a clone's suffix: ".spec." + HASH_DIGITS hex digits (+ ".<n>" when that name was taken); the
# one spelling difftext and the plots strip to name a clone by its callee
CLONE_SUFFIX = rf"\.spec\.[0-9a-f]{{{HASH_DIGITS}}}(?:\.\d+)?"
_SPEC_SUFFIX = re.compile(rf"(?:{CLONE_SUFFIX})+$")
BUDGET = "size budget"  # how a budget refusal's reason starts
FLASH = "flash budget"  # ... and a flash-budget refusal's

@dataclass(frozen=True)
class ConstArg:
    index: int  # argument position, 0-based
    value: str  # typed constant as LLVM prints it: "i32 16", "ptr @mlp_w_w1", "ptr getelementptr (...)";
    # for a pointer to constant data on the caller's stack: "ptr <{ i16 125, ... }>" (what it points to)
    summary: str  # what the log shows: "i32 16", "@mlp_w_w1 (f32[16x32], 2048 bytes, constant)"
    init: str = ""  # pointer to constant stack data: the initializer of the private constant global the clone reads
    align: int = 4


@dataclass(frozen=True)
class Site:
    """One call site with constant arguments, and what became of it."""
    number: int  # 1-based, module order (numbering continues across rounds)
    round: int  # specialization round (round 2 sees the constants round 1 propagated)
    caller: str
    callee: str
    nargs: int
    const: tuple[ConstArg, ...]
    status: str  # kept | shared | refused
    clone: str | None  # the clone it calls now (None when refused)
    reason: str = ""
    clone_bytes: int | None = None  # code the clone adds: itself and what only it calls
    callee_bytes: int | None = None  # the unspecialized callee with every function it calls
    call: int | None = None  # the model's call number (callsites.py), when the call carries one
    shape_only: bool = False  # all-args specialized it by dims' rule (a call chosen shape-only, or inside one)


@dataclass(frozen=True)
class Specialized:
    mode: str
    max_growth: float | None
    text: str  # the module after specialization (canonical IR text)
    sites: tuple[Site, ...]
    flash_budget: int | None = None  # bytes of code + data the specialized build may take
    sizing: object = None  # specialize.Sizing of this round, for the next one (not logged)

    @property
    def clones(self) -> list[str]:
        return list(dict.fromkeys(s.clone for s in self.sites if s.clone))

    def counts(self) -> dict:
        c = {"kept": 0, "shared": 0, "refused": 0}
        for s in self.sites:
            c[s.status] += 1
        return c

    @property
    def refused_by_budget(self) -> int:
        """Call sites refused by the size budget (the others could not be specialized at all)."""
        return sum(1 for s in self.sites if s.status == "refused" and s.reason.startswith((BUDGET, FLASH)))

    @property
    def rounds(self) -> int:
        return max((s.round for s in self.sites), default=1)

    def refused_keys(self) -> frozenset:
        """Refused call sites, so a later round neither retries nor logs them again."""
        return frozenset(site_key(s.caller, s.callee, s.const) for s in self.sites if s.status == "refused")

    def log_json(self) -> str:
        return json.dumps({"mode": self.mode, "max_growth": self.max_growth, "flash_budget": self.flash_budget,
                           "counts": self.counts(),
                           "rounds": self.rounds, "clones": self.clones,
                           "sites": [asdict(s) for s in self.sites]},
                          indent=1, sort_keys=True) + "\n"

    def log_text(self) -> str:
        """The specialization log as people read it: one block per call site."""
        c = self.counts()
        budget = (f"max growth {self.max_growth:g}x (code bytes of a callee's clones vs the unspecialized callee's)"
                  if self.max_growth is not None else "no size budget")
        if self.flash_budget is not None:
            budget += f", flash budget {self.flash_budget} bytes (code + data)"
        out = [f"; specialization log: mode {self.mode}, {budget}",
               f"; {len(self.sites)} call sites with constant arguments: {c['kept']} kept, "
               f"{c['shared']} shared, {c['refused']} refused; {len(self.clones)} clones"]
        last_round = 0
        for s in self.sites:
            if s.round != last_round:
                out.append(f"; round {s.round}")
                last_round = s.round
            tags = ([f"call {s.call}"] if s.call is not None else []) + (["shape-only"] if s.shape_only else [])
            head = f"#{s.number} {quote(s.caller)} -> {quote(s.callee)}"
            head += f" ({', '.join(tags)}): {s.status}" if tags else f": {s.status}"
            if s.clone:
                head += f" {quote(s.clone)}"
            if s.reason:
                head += f" ({s.reason})"
            out.append(head)
            for a in s.const:
                out.append(f"    arg {a.index} = {a.summary}")
            if len(s.const) < s.nargs:
                rest = sorted(set(range(s.nargs)) - {a.index for a in s.const})
                out.append(f"    kept as parameters: arg {', '.join(map(str, rest))}")
            if s.clone_bytes is not None and s.status != "shared":
                out.append(f"    size: clone adds {s.clone_bytes} bytes; callee {s.callee_bytes} bytes "
                           "(with the functions it calls)")
        return "\n".join(out) + "\n"


def constants_text(pairs) -> str:
    """The canonical text of constant arguments, (index, typed value) pairs: "0: i32 16\n2: ptr @w"."""
    return "\n".join(f"{i}: {v}" for i, v in sorted(pairs))


def lineage(history) -> dict[str, tuple[str, tuple, tuple]]:
    """Clone -> (the original function, the constants it fixes at that function's parameter
    positions, the original positions of its own parameters), from the call sites of earlier
    rounds in order. A clone's clone composes: f with arg 2 fixed, then arg 0 of that, is f
    with args 0 and 2 fixed, whatever order the rounds found them in."""
    out: dict[str, tuple[str, tuple, tuple]] = {}
    for s in history:
        if not s.clone or s.clone in out:
            continue
        root, fixed, kept = out.get(s.callee, (s.callee, (), tuple(range(s.nargs))))
        here = {a.index for a in s.const}
        fixed = tuple(sorted(fixed + tuple((kept[a.index], a.value) for a in s.const)))
        out[s.clone] = (root, fixed, tuple(k for i, k in enumerate(kept) if i not in here))
    return out


def clone_name(callee: str, const, taken=frozenset(), history: dict | None = None) -> str:
    """`<root>.spec.<hash>`: root is the original function (a clone's clone is `f.spec.<h2>`,
    not `f.spec.<h1>.spec.<h2>`); the hash is of the root and every constant fixed at its
    parameter positions (`lineage`, from `history`), so the name depends on nothing else: not on
    call-site order (editing one layer renames no other layer's clones) nor on the rounds that
    fixed the constants. A name already in `taken` gets `.2`, `.3`, ... (in call-site order, the
    only order-dependent part: a hash collision, or the same constants reached twice)."""
    root, fixed, kept = (history or {}).get(callee, (None, (), ()))
    if root is None:
        root, pairs = callee, tuple((a.index, a.value) for a in const)
    else:
        pairs = fixed + tuple((kept[a.index], a.value) for a in const)
    digest = hashlib.sha256(f"{root}\0{constants_text(pairs)}".encode()).hexdigest()[:HASH_DIGITS]
    root = _SPEC_SUFFIX.sub("", root) or root  # a clone whose lineage is unknown
    name, n = f"{root}.spec.{digest}", 1
    while name in taken:
        n += 1
        name = f"{root}.spec.{digest}.{n}"
    return name


def merge(rounds: list[Specialized]) -> Specialized:
    """Several rounds as one result: the last round's module, every round's call sites."""
    sites = tuple(s for r in rounds for s in r.sites)
    return Specialized(rounds[-1].mode, rounds[-1].max_growth, rounds[-1].text, sites, rounds[-1].flash_budget)


def site_key(caller: str, callee: str, const) -> tuple:
    return (caller, callee, tuple((a.index, a.value) for a in const))

