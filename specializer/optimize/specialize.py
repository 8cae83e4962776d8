"""Call-site specialization: clone a callee for the constant arguments of its call sites.

For every call of a defined function that passes constant arguments, a clone
``@<callee>.spec.<hash>`` takes only the remaining (non-constant) arguments; its body is one call
of the original with the constants in place, marked ``alwaysinline``, so the always-inliner
later puts the callee's body into the clone where constant propagation folds it. The call
site is rewritten to call the clone. Call sites with the same callee and the same constants
share one clone. The hash is of the callee and its constants only (`clone_name`), so a clone
keeps its name when other call sites come or go.

Modes:

* ``dims`` (Glow's default): only constant scalar integer and float arguments.
* ``all-args``: every constant argument -- also global addresses, constant GEP expressions into
  globals (buffers in the static memory plan), constant weight arrays, XLA call frames, null.

Size budget (``max_growth``): the module with every candidate clone is optimized once as a
scratch copy in which each clone is kept out of line (``noinline``) and each specialized callee
stays as an external, unspecialized function; code bytes are ELF symbol sizes as emitted for
Cortex-M4, and the call graph is read off the optimized scratch IR. A callee's size is its own
bytes plus those of every function it reaches; what a clone adds is its own bytes plus those of
the functions it reaches that the callee does not (and no earlier clone of it already added).
All clones of one callee together may add at most ``max_growth`` times the callee's size (and
never less than MIN_BUDGET_BYTES more than it): clones are admitted in the order of their first
call site, and one that would push the total over the limit is refused. Refused call sites
keep calling the original and say so in the log. Counting the clones of a callee together is
what catches duplication: five clones of a kernel, each as large as the kernel, add five times
its code although each alone is "1x". Counting what a function reaches is what keeps a thin
wrapper (a few bytes that call the real kernel) from looking tiny. The budget is per round; from
round 2 on the scratch module is pruned to the round's clones, their callees and what those reach
(`_scratch`), and what it leaves out counts for the flash budget as the round before sized it.

The rewrite is textual on LLVM's printed IR (one instruction per line, canonical), guided by
llvmlite's view of each call (callee, operand kinds, types); the result is re-parsed and
printed again, so it is canonical and byte-identical for the same input. Which calls qualify, with
which constants: callplan.py; the result, its log and the clones' names: speclog.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable

import llvmlite.binding as llvm

from specializer.errors import UserError
from specializer.llvm import irtext, module
from specializer.llvm.irtext import quote
from specializer.optimize.callplan import ConstCall, ModuleText, Planner
# ConstArg: what a Site holds, imported with it by the pass's users
from specializer.optimize.speclog import (BUDGET, FLASH, ConstArg, Site, Specialized,  # noqa: F401
                                          clone_name, lineage, site_key)

MODES = ("dims", "all-args")

# function attributes that do not carry over to a clone: memory effects (the clone reaches
# through globals what the callee reached through its arguments), inlining (decided anew),
# and those that name argument positions
_DROP_FN_ATTRS = ("memory(...)", "alwaysinline", "allocsize(...)", "allockind(...)")
_DROP_FN_STRING_ATTRS = ("alloc-family",)

# a clone at most this many bytes larger than its callee is never refused (a few instructions
# more than a tiny wrapper is no growth worth refusing)
MIN_BUDGET_BYTES = 64


@dataclass(frozen=True)
class CodeSizes:
    """What a sizer measures on the optimized scratch module."""
    bytes: dict  # function -> code bytes (ELF symbol size)
    calls: dict  # function -> names of the defined functions it calls directly
    data: int = 0  # bytes of initialized global data (constants, weights): flash too
    # flash bytes of the functions a pruned scratch build left out, with their data (the round
    # before measured them: `Sizing`)
    outside: int = 0

    def reach(self, fn: str) -> set[str]:
        """`fn` and every function it reaches through direct calls."""
        seen, todo = set(), [fn]
        while todo:
            f = todo.pop()
            if f not in seen and f in self.bytes:
                seen.add(f)
                todo.extend(self.calls.get(f, ()))
        return seen

    def total(self, fns) -> int:
        return sum(self.bytes[f] for f in fns)

    def need(self, dead: set = frozenset()) -> int:
        """Flash bytes (code + data) of the scratch build without the functions `dead`."""
        return self.outside + self.total(set(self.bytes) - dead) + self.data


@dataclass(frozen=True)
class Sizing:
    """What one round's sizing found, for the next round: each function's code bytes (measured
    then or carried from before) and the flash bytes the round's accepted clones need."""
    bytes: dict
    need: int


SIZER = Callable[[str], CodeSizes]  # module text -> code sizes and call graph


# --------------------------------------------------------------------------- rewriting


@dataclass
class _Clone:
    name: str
    callee: str
    key: tuple
    first: ConstCall
    sites: list = field(default_factory=list)


def _rewrite_call(line: str, call: ConstCall, clone: str) -> str:
    const_at = {a.index for a in call.const}
    kept = [a for i, a in enumerate(call.args) if i not in const_at]
    return irtext.replace_call(line, call.callee_start, call.args_end, clone, kept)


def _data_name(clone: str, index: int) -> str:
    """The private constant global holding what a clone's argument `index` pointed to."""
    return f"{clone}.arg{index}"


def _data_globals(c: _Clone) -> str:
    return "".join(f"{quote(_data_name(c.name, a.index))} = private unnamed_addr constant {a.init}, align {a.align}\n"
                   for a in c.first.const if a.init)


def _clone_text(m: ModuleText, c: _Clone) -> str:
    call = c.first
    const = {a.index: f"ptr {quote(_data_name(c.name, a.index))}" if a.init else a.value for a in call.const}
    params, args = [], []
    for i, ty in enumerate(call.types):
        if i in const:
            args.append(const[i])
        else:
            params.append(f"{ty} %arg{i}")
            args.append(f"{ty} %arg{i}")
    attrs = irtext.without_attributes(m.fn_attributes(c.callee), _DROP_FN_ATTRS, _DROP_FN_STRING_ATTRS).strip()
    ret = call.ret
    cc = m.calling_convention(c.callee)  # the clone is called as the callee was
    invoke = f"call {cc}{ret} {quote(c.callee)}({', '.join(args)}) alwaysinline"
    body = ["  ret void" if ret == "void" else f"  ret {ret} %r"]
    body.insert(0, f"  {invoke}" if ret == "void" else f"  %r = {invoke}")
    return "\n".join([f"define internal {cc}{ret} {quote(c.name)}({', '.join(params)}) {attrs} {{".replace("  {", " {"),
                      "entry:", *body, "}", ""])


def _applied(m: ModuleText, clones: list[_Clone], where: str) -> llvm.ModuleRef:
    lines = list(m.lines)
    for c in clones:
        for call in c.sites:
            lines[call.line] = _rewrite_call(lines[call.line], call, c.name)
    text = ("\n".join(lines) + "\n" + "".join(_data_globals(c) for c in clones)
            + "\n".join(_clone_text(m, c) for c in clones))
    return module.parse(text, where)


def _apply(m: ModuleText, clones: list[_Clone], where: str) -> str:
    return str(_applied(m, clones, where))


# a pruned scratch build's stand-ins for the callers it leaves out (never counted: `_counted`)
_STUB = "scratch.call."


def _stubs(m: ModuleText, clones: list[_Clone]) -> str:
    """One function per call site of each clone, calling it as the site does: the site's
    constant arguments as they are, the others as the stub's parameters. What the clones'
    callers tell O2 about them (interprocedural constants, dead arguments) stays as it was."""
    out = []
    for c in clones:
        cc = m.calling_convention(c.callee)
        for k, call in enumerate(c.sites):
            const_at = {a.index for a in call.const}
            params, args = [], []
            for i, a in enumerate(call.args):
                if i in const_at:
                    continue
                value = re.search(f"(?<= ){irtext.LOCAL}$", a)
                if value:  # a value of the caller's: unknown here (the attributes stay)
                    args.append(f"{a[:value.start()]}%p{len(params)}")
                    params.append(f"{call.types[i]} %p{len(params)}")
                else:
                    args.append(a)
            head = "" if call.ret == "void" else "%r = "
            out.append(f"define void {quote(f'{_STUB}{c.name}.{k}')}({', '.join(params)}) {{\n"
                       f"  {head}call {cc}{call.ret} {quote(c.name)}({', '.join(args)})\n  ret void\n}}\n")
    return "".join(out)


def _counted(sizes: CodeSizes) -> CodeSizes:
    """The sizes without the stubs'."""
    return replace(sizes, bytes={f: n for f, n in sizes.bytes.items() if not f.startswith(_STUB)},
                   calls={f: c for f, c in sizes.calls.items() if not f.startswith(_STUB)})


def _scratch(m: ModuleText, clones: list[_Clone], where: str, pruned: bool) -> tuple[str, set[str]]:
    """The module for measuring sizes, and the functions it defines: clones out of line,
    specialized callees unspecialized. `pruned` (the rounds after the first): only the clones,
    their callees and what those reach are defined; the rest -- above all the earlier rounds'
    clones, the model's largest functions, whose O2 was two thirds of a kws_dscnn sizing round
    -- is declared only, and its bytes are the round before's. Each call site of a clone is
    then a stub of its own (`_stubs`), so the clone sees from its callers what it saw before."""
    mod = _applied(m, clones, where)
    for c in clones:
        mod.get_function(c.name).add_function_attribute("noinline")
    for callee in dict.fromkeys(c.callee for c in clones):
        fn = mod.get_function(callee)
        fn.linkage = llvm.Linkage.external  # no constants propagate into it from its callers
        fn.add_function_attribute("noinline")
    lines = str(mod).split("\n")
    spans = irtext.function_spans(lines)
    if not pruned:
        return "\n".join(lines), set(spans)
    calls = {f: {c for line in lines[a:b + 1] if (c := irtext.callee(line))} for f, (a, b) in spans.items()}
    kept, todo = set(), [c.name for c in clones] + [c.callee for c in clones]
    while todo:
        f = todo.pop()
        if f in spans and f not in kept:
            kept.add(f)
            todo.extend(calls[f])
    irtext.declare_only(lines, spans, [f for f in spans if f not in kept])
    return "\n".join(lines) + "\n" + _stubs(m, clones), kept


def _flash_refusals(sizes: CodeSizes, candidates: list, measured: dict, refused: dict, budget: int) -> None:
    """Refuse clones, most added code first, until the scratch build's code + data fits `budget`.

    The scratch build holds every candidate clone and every original callee, unrolled as the
    variant's O2 unrolls, so its size is an upper bound of what the accepted clones give."""
    dead = set().union(*(measured[c.name]["added"] for c in candidates if c.name in refused))
    need = sizes.need(dead)
    order = sorted((c for c in candidates if c.name not in refused),
                   key=lambda c: (-sizes.total(measured[c.name]["added"] - dead), c.name))
    for c in order:
        if need <= budget:
            break
        gone = measured[c.name]["added"] - dead
        refused[c.name] = (f"{FLASH}: the build would need {need} bytes of flash > {budget} "
                           f"(--flash-budget); this clone adds {sizes.total(gone)}")
        need -= sizes.total(gone)
        dead |= gone


def specialize(text: str, mode: str = "dims", *, max_growth: float | None = None,
               flash_budget: int | None = None, sizer: SIZER | None = None, shapes: dict | None = None,
               where: str = "module.ll", round: int = 1, first_number: int = 1,
               skip: frozenset = frozenset(), reserved: frozenset = frozenset(), earlier: tuple = (),
               shape_only: frozenset = frozenset(), dims_callers: frozenset = frozenset(),
               before: Sizing | None = None) -> Specialized:
    """Specialize every call site of `text` with constant arguments (see the module docstring).

    sizer: module text -> {function: code bytes}, required with max_growth or flash_budget.
    flash_budget: bytes of code + initialized data the scratch build may reach; past it, the
    clones that add the most code are refused first until it fits.
    shapes: global symbol -> (dtype, shape), to describe weights in the log.
    round, first_number, skip, reserved: for later rounds (see `merge`); `skip` holds the call
    sites refused before (Specialized.refused_keys), left alone and not logged again; `reserved`
    the names of earlier rounds' clones, never reused even when a clone has been inlined away;
    `earlier` their call sites, so a clone's clone is named by everything it fixes (`lineage`).
    shape_only (all-args): the model's call numbers (callsites.py) to specialize by dims' rule, as
    are the calls inside `dims_callers` (the clones made for such calls in earlier rounds).
    before: the sizing of the round before (Specialized.sizing), which makes this round's scratch
    build a pruned one (`_scratch`)."""
    if mode not in MODES:
        raise UserError(f"unknown specialization mode '{mode}' (use {' or '.join(MODES)})")
    if max_growth is not None and max_growth <= 0:
        raise UserError(f"--max-growth must be positive, not {max_growth:g}")
    m = ModuleText(text, where)
    planner = Planner(m, mode, shapes or {}, shape_only, dims_callers)
    calls = [c for c in planner.calls() if site_key(c.caller, c.callee, c.const) not in skip]

    clones: dict[tuple, _Clone] = {}
    taken = set(m.functions) | set(reserved)
    history = lineage(earlier)
    for call in calls:
        if call.problem:
            continue
        key = (call.callee, tuple((a.index, a.value) for a in call.const))
        if key not in clones:
            name = clone_name(call.callee, call.const, taken, history)
            taken.add(name)
            clones[key] = _Clone(name, call.callee, key, call)
        clones[key].sites.append(call)
    candidates = list(clones.values())

    measured: dict[str, dict] = {}  # clone -> its sizes for the log
    sizing = None
    refused: dict[str, str] = {}
    if (max_growth is not None or flash_budget is not None) and candidates:
        if sizer is None:
            raise ValueError("a size budget needs a sizer")
        scratch, defined = _scratch(m, candidates, where, pruned=before is not None)
        sizes = _counted(sizer(scratch))
        if before is not None:
            sizes = replace(sizes, outside=max(0, before.need - sum(before.bytes.get(f, 0) for f in defined)))
        counted: dict[str, set] = {}  # callee -> functions its admitted clones added
        for c in candidates:
            base = sizes.reach(c.callee)
            theirs = sizes.total(base)
            new = sizes.reach(c.name) - base - counted.get(c.callee, set())
            mine = sizes.total(new)
            total = sizes.total(counted.get(c.callee, set()) | new)
            measured[c.name] = dict(clone_bytes=mine, callee_bytes=theirs)
            measured[c.name]["added"] = new
            if max_growth is not None and total > max(max_growth * theirs, theirs + MIN_BUDGET_BYTES):
                refused[c.name] = (f"{BUDGET}: clones of {quote(c.callee)} would add {total} bytes > "
                                   f"{max_growth:g} x its {theirs} bytes")
            else:
                counted[c.callee] = counted.get(c.callee, set()) | new
        if flash_budget is not None:
            _flash_refusals(sizes, candidates, measured, refused, flash_budget)
        dead = set().union(*(measured[c.name]["added"] for c in candidates if c.name in refused))
        sizing = Sizing({**(before.bytes if before else {}), **sizes.bytes}, sizes.need(dead))
        for v in measured.values():
            v.pop("added")
    accepted = [c for c in candidates if c.name not in refused]
    out = _apply(m, accepted, where) if accepted else m.text

    by_line = {call.line: c for c in candidates for call in c.sites}
    sites, seen = [], set()
    for n, call in enumerate(calls, first_number):
        c = by_line.get(call.line)
        common = dict(number=n, round=round, caller=call.caller, callee=call.callee, nargs=len(call.types),
                      const=tuple(call.const), call=call.number, shape_only=call.shape_only)
        if c is None:
            sites.append(Site(**common, status="refused", clone=None, reason=call.problem))
            continue
        sizes_of = measured.get(c.name, {})
        if c.name in refused:
            sites.append(Site(**common, status="refused", clone=None, reason=refused[c.name], **sizes_of))
        else:
            sites.append(Site(**common, status="shared" if c.name in seen else "kept", clone=c.name, **sizes_of))
            seen.add(c.name)
    return Specialized(mode, max_growth, out, tuple(sites), flash_budget, sizing)
