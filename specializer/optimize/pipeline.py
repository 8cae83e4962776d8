"""Pass pipelines as text: `a,b{key=value,...},c`, in the manner of xDSL's `-p` and LLVM's `-passes=`.

Every step a linked variant takes is a pass here: a frozen dataclass whose fields are its options
(written with `-` in the text: `max_growth` is `max-growth`), listed in PASSES, the one registry.
`parse` turns text into a tuple of passes, `to_text` prints one back with every option spelled
out, so `parse(to_text(p)) == p` and the printed pipeline is exactly what runs (variants.optimized
builds a variant's pipeline, prints it and runs what it parses back).

Three stages, in this order:

* model passes (`relayout`) act on the model's text before it is linked: they need the model
  (model.ll with model.json), not a linked module;
* `link` links the model with the libjit bitcode, internalizes everything but the entry and
  I/O buffers, and drops dead code: the module right after it is a build's `linked.ll`;
* module passes (`specialize`, `constprop`, `O2`, ...) act on that module: the part of a
  pipeline after `link` turns `linked.ll` into `optimized.ll` (a build's `pipeline.txt`).

`linked.ll` is printed with LLVM's use-list order (`uselistorder` directives): some passes
(LLVM's FunctionSpecialization in the llvm-funcspec variant) number their clones by use-list
order, which a re-parse without the directives does not restore, so `opt` on a build's
`linked.ll` reproduces its `optimized.ll` byte for byte only with them.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, field, fields
from typing import ClassVar

import llvmlite.binding as llvm

from specializer.llvm import module, transforms
from specializer.optimize import bufalias, callsites, relayout, variants, zeroweights

from specializer.library import cmsis
from specializer.errors import UserError

MODEL, LINK, MODULE = "model", "link", "module"


def option(default, help: str, kind: str, none: str | None = None, choices: tuple = (), minimum=None):
    """A pass option: `kind` is int, float, bool, choice or calls (a set of the model's call numbers,
    `3+7+11`; callsites.py); `none` how None (for calls: the empty set) is written."""
    return field(default=default, metadata=dict(help=help, kind=kind, none=none, choices=choices, minimum=minimum))


@dataclass
class State:
    """What flows through a pipeline: the IR (text or module; each converted on demand) and what
    the steps report for the specialization log."""
    name: str  # the module's ID (`; ModuleID = '...'` when printed)
    where: str  # how errors name the input
    text: str | None = None
    module: llvm.ModuleRef | None = None
    model: object = None  # inputs.Model: for model passes and `link`
    shapes: dict = field(default_factory=dict)  # model tensors -> (dtype, shape): see `specialize`
    linked: str | None = None  # the module right after `link`, with its use-list order
    spec: object = None  # specialize.Specialized
    relaid: tuple = ()
    aliases: tuple = ()
    zero_weights: int = 0

    @classmethod
    def of_model(cls, model) -> State:
        """A pipeline's start on a model (inputs.Model), as a build starts."""
        return cls(model.path.name, str(model.path), text=model.text, model=model, shapes=dict(model.shapes))

    def as_text(self) -> str:
        if self.text is None:
            self.text, self.module = str(self.module), None
        return self.text

    def as_module(self) -> llvm.ModuleRef:
        if self.module is None:
            self.module = module.parse(self.text, self.where)
            self.module.name = self.name
            self.text = None
        return self.module

    def set_text(self, text: str) -> None:
        self.text, self.module = text, None

    def set_module(self, mod: llvm.ModuleRef) -> None:
        self.text, self.module = None, mod


@contextmanager
def use_list_order():
    """Print modules with `uselistorder` directives while inside (LLVM's -preserve-ll-uselistorder)."""
    llvm.set_option("", "-preserve-ll-uselistorder=true")
    try:
        yield
    finally:
        llvm.set_option("", "-preserve-ll-uselistorder=false")


@dataclass(frozen=True)
class Pass:
    """One step: `name` in the text, its `stage`, a `summary` for help; the dataclass fields of a
    subclass are its options."""
    name: ClassVar[str]
    stage: ClassVar[str] = MODULE
    summary: ClassVar[str]

    def run(self, state: State) -> None:
        raise NotImplementedError


_THRESHOLD_HELP = "LLVM's loop-unroll threshold (llvm: LLVM's own, 150 at O2)"
_SHAPE_ONLY_HELP = ("the model's calls (numbers as `call N` in the specialization log, joined by +) that all-args "
                    "{what}: where measurement found the shape-only clone faster")


def _calls_option(what: str):
    return option(frozenset(), _SHAPE_ONLY_HELP.format(what=what), "calls", none="none")


@dataclass(frozen=True)
class Relayout(Pass):
    name = "relayout"
    stage = MODEL
    summary = ("constant weights re-laid out for the kernel that reads them: a pruned dense layer's weight "
               "as compressed sparse columns for libjit_vecmat_csc_f32; an int8 conv with constant "
               "per-channel parameters on the shim's unrolled conv (relayout.py); numbers the model's calls "
               "first (callsites.py)")
    shape_only: frozenset = _calls_option("leaves alone")

    def run(self, state: State) -> None:
        text = callsites.number(state.as_text())
        text, notes = relayout.relayout(text, cmsis.cmsis_nn().kind == "shim", self.shape_only)
        state.set_text(text)
        state.relaid += tuple(notes)


@dataclass(frozen=True)
class Link(Pass):
    name = "link"
    stage = LINK
    summary = ("number the model's calls (callsites.py), link the model with the libjit bitcode, internalize "
               "all but the entry and the I/O buffers, drop dead code: the module after it is a build's linked.ll")

    def run(self, state: State) -> None:
        text = callsites.number(state.as_text())
        if re.search(r"^define [^@\n]*@libjit_", text, re.M):  # else: a cryptic duplicate-symbol error
            raise UserError(f"{state.where}: already linked (it defines libjit's kernels): run only the steps "
                            "after 'link' on it")
        mod = variants.linked(state.model, text)
        with use_list_order():
            state.linked = str(mod)
        state.set_module(mod)


@dataclass(frozen=True)
class Specialize(Pass):
    name = "specialize"
    summary = ("clone each callee per distinct set of constant arguments at its call sites, in rounds with "
               "constprop between them until no new clone (specialize.py); its output is specialized.ll")
    mode: str = option("dims", "dims: constant scalars and pointers to constant non-tensor data (Glow's "
                       "default); all-args: every constant argument", "choice", choices=("dims", "all-args"))
    rounds: int = option(variants.DEFAULT_ROUNDS, "at most this many rounds", "int", minimum=1)
    max_growth: float | None = option(variants.DEFAULT_MAX_GROWTH, "the clones of a callee may add at most X "
                                      "times its code", "float", none="none")
    flash_budget: int | None = option(variants.DEFAULT_FLASH_BUDGET, "code + data bytes the scratch build may "
                                      "take", "int", none="none", minimum=1)
    unroll_threshold: int | None = option(None, _THRESHOLD_HELP + " in the sizing build and between rounds",
                                          "int", none="llvm", minimum=0)
    pre_unroll: bool = option(False, "unroll loops in constprop between rounds too", "bool")
    shape_only: frozenset = _calls_option("specializes by dims' rule (with the calls inside their clones)")

    def run(self, state: State) -> None:
        options = variants.Options(max_growth=self.max_growth, unroll_threshold=self.unroll_threshold,
                                   rounds=self.rounds, pre_unroll=self.pre_unroll, flash_budget=self.flash_budget,
                                   shape_only=self.shape_only)
        spec = variants.specialize_rounds(state.as_text(), self.mode, options, state.shapes,
                                          f"{state.name} ({self.mode})")
        state.spec = spec
        state.name = state.where = "specialized.ll"
        state.set_text(spec.text)


@dataclass(frozen=True)
class Bufalias(Pass):
    name = "bufalias"
    summary = "a constant address 4096 bytes or more into a buffer becomes an alias of its own (bufalias.py)"

    def run(self, state: State) -> None:
        text, aliases = bufalias.rewrite(state.as_text())
        state.set_text(text)
        state.aliases += tuple(aliases)


@dataclass(frozen=True)
class Constprop(Pass):
    name = "constprop"
    summary = ("IPSCCP, always-inliner (the clones' calls), SROA, SCCP, InstCombine, SimplifyCFG, GlobalOpt, "
               "GlobalDCE (transforms.constprop)")
    unroll_threshold: int | None = option(None, _THRESHOLD_HELP, "int", none="llvm", minimum=0)
    unroll: bool = option(False, "also rotate and unroll loops here (--pre-unroll)", "bool")

    def run(self, state: State) -> None:
        transforms.constprop(state.as_module(), self.unroll_threshold, self.unroll)


@dataclass(frozen=True)
class O2(Pass):
    name = "O2"
    summary = "LLVM's standard O2 module pipeline"
    unroll_threshold: int | None = option(None, _THRESHOLD_HELP, "int", none="llvm", minimum=0)

    def run(self, state: State) -> None:
        transforms.optimize(state.as_module(), self.unroll_threshold)


@dataclass(frozen=True)
class LlvmFuncspec(Pass):
    name = "llvm-funcspec"
    summary = ("O2 with LLVM's FunctionSpecialization forced on in its IPSCCP: "
               + ", ".join(f"-{k}={v}" for k, v in transforms.FUNCSPEC_FORCED.items()))

    def run(self, state: State) -> None:
        transforms.optimize(state.as_module(), funcspec=True)


@dataclass(frozen=True)
class Zeroweights(Pass):
    name = "zeroweights"
    summary = ("a multiply-add by a constant 0.0 becomes its addend, then InstCombine and DCE "
               "(zeroweights.py; after O2 has unrolled and folded the weights)")

    def run(self, state: State) -> None:
        mod, dropped = zeroweights.drop(state.as_module())
        state.set_module(mod)
        state.zero_weights += dropped


@dataclass(frozen=True)
class Cleanup(Pass):
    name = "cleanup"
    summary = "InstCombine, DCE, SimplifyCFG (transforms.cleanup)"

    def run(self, state: State) -> None:
        transforms.cleanup(state.as_module())


PASSES: dict[str, type[Pass]] = {p.name: p for p in (Relayout, Link, Specialize, Bufalias, Constprop, O2,
                                                     LlvmFuncspec, Zeroweights, Cleanup)}


# --------------------------------------------------------------------------- text


def _key(f) -> str:
    return f.name.replace("_", "-")


def _format(f, value) -> str:
    m = f.metadata
    if value is None:
        return m["none"]
    if m["kind"] == "bool":
        return "true" if value else "false"
    if m["kind"] == "calls":
        return callsites.format_set(value) if value else m["none"]
    return repr(float(value)) if m["kind"] == "float" else str(value)


def _value(p: type[Pass], f, text: str):
    m = f.metadata
    where = f"{p.name}{{{_key(f)}={text}}}"
    if m["none"] is not None and text == m["none"] and m["kind"] != "calls":
        return None
    try:
        if m["kind"] == "bool":
            if text not in ("true", "false"):
                raise ValueError
            return text == "true"
        if m["kind"] == "choice":
            if text not in m["choices"]:
                raise ValueError
            return text
        if m["kind"] == "calls":
            return frozenset() if text == m["none"] else callsites.parse_set(text)
        value = int(text) if m["kind"] == "int" else float(text)
    except ValueError:
        raise UserError(f"pass pipeline: {where}: {_key(f)} takes {_spelling(f)}") from None
    too_small = value < m["minimum"] if m["minimum"] is not None else False
    if too_small or (m["kind"] == "float" and not value > 0):  # (not > 0: NaN too)
        raise UserError(f"pass pipeline: {where}: {_key(f)} takes {_spelling(f)}")
    return value


def _spelling(f) -> str:
    m = f.metadata
    what = {"bool": "true or false", "choice": " or ".join(m["choices"]),
            "calls": "call numbers joined by + (3+7+11)",
            "float": "a positive number"}.get(m["kind"])
    if what is None:
        what = "an integer" + (f" >= {m['minimum']}" if m["minimum"] is not None else "")
    return what + (f", or {m['none']}" if m["none"] is not None else "")


def to_text(pipeline) -> str:
    """The pipeline as text, every option spelled out."""
    out = []
    for p in pipeline:
        opts = [f"{_key(f)}={_format(f, getattr(p, f.name))}" for f in fields(p)]
        out.append(p.name + ("{" + ",".join(opts) + "}" if opts else ""))
    return ",".join(out)


def _split(text: str) -> list[str]:
    """Top-level comma-separated items; braces group options."""
    items, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "{":
            depth += 1
            if depth > 1:
                raise UserError(f"pass pipeline: '{{' inside the options of '{text[start:i].split('{')[0].strip()}'")
        elif c == "}":
            depth -= 1
            if depth < 0:
                raise UserError(f"pass pipeline: '}}' without '{{' at column {i + 1}")
        elif c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth:
        raise UserError(f"pass pipeline: '{{' without '}}' in '{text[start:].strip()}'")
    items.append(text[start:])
    return items


_ITEM = re.compile(r"^\s*([A-Za-z0-9_-]*)\s*(?:\{(.*)\})?\s*$", re.S)


def parse(text: str) -> tuple[Pass, ...]:
    """Text -> passes; a bad pipeline is one UserError line naming what exists."""
    pipeline = []
    for item in _split(text):
        m = _ITEM.match(item)
        if not m or not m.group(1):
            raise UserError(f"pass pipeline: '{item.strip()}' is not a pass (write name or name{{key=value,...}})")
        name, body = m.group(1), m.group(2)
        p = PASSES.get(name)
        if p is None:
            raise UserError(f"pass pipeline: unknown pass '{name}' (have: {', '.join(PASSES)}; "
                            "'specialize help opt' describes them)")
        known = {_key(f): f for f in fields(p)}
        values = {}
        for kv in (body.split(",") if body is not None and body.strip() else []):
            key, eq, value = (s.strip() for s in kv.partition("="))
            f = known.get(key)
            if f is None:
                have = ", ".join(known) or "none"
                raise UserError(f"pass pipeline: pass '{name}' has no option '{key}' (its options: {have})")
            if not eq or not value:
                raise UserError(f"pass pipeline: {name}{{{key}}}: write {key}=VALUE ({_spelling(f)})")
            if f.name in values:
                raise UserError(f"pass pipeline: {name}: option '{key}' given twice")
            values[f.name] = _value(p, f, value)
        pipeline.append(p(**values))
    check(pipeline)
    return tuple(pipeline)


def check(pipeline) -> None:
    """Model passes, then at most one `link`, then module transforms."""
    links = [i for i, p in enumerate(pipeline) if p.stage == LINK]
    if len(links) > 1:
        raise UserError("pass pipeline: 'link' appears more than once")
    end = links[0] if links else 0
    for i, p in enumerate(pipeline):
        if p.stage == MODEL and i > end or p.stage == MODEL and not links:
            raise UserError(f"pass pipeline: '{p.name}' acts on the model before linking: it goes before 'link'")
        if p.stage == MODULE and links and i < end:
            raise UserError(f"pass pipeline: '{p.name}' acts on the linked module: it goes after 'link'")


def after_link(pipeline) -> tuple[Pass, ...]:
    """The steps that turn linked.ll into optimized.ll."""
    links = [i for i, p in enumerate(pipeline) if p.stage == LINK]
    return tuple(pipeline[links[0] + 1:]) if links else tuple(pipeline)


def needs_model(pipeline) -> bool:
    return any(p.stage != MODULE for p in pipeline)


def run(pipeline, state: State) -> State:
    check(pipeline)
    if needs_model(pipeline) and state.model is None:
        raise UserError(f"{state.where}: the pipeline links ('link') but the input is no model: give a model.ll "
                        "(model.json next to it), or only the steps after 'link' for a linked.ll")
    for p in pipeline:
        p.run(state)
    return state


def help_text() -> str:
    """Every pass with its options (for `specialize help opt`)."""
    out = []
    stages = {MODEL: "model pass (before link)", LINK: "model -> linked module", MODULE: "module pass"}
    for p in PASSES.values():
        out.append(f"  {p.name}  [{stages[p.stage]}]")
        out.append(_wrap(p.summary, "      "))
        for f in fields(p):
            default = _format(f, f.default if f.default is not MISSING else None)
            out.append(_wrap(f"{_key(f)}=<{_spelling(f)}>  {f.metadata['help']} (default {default})", "      "))
    return "\n".join(out) + "\n"


def _wrap(text: str, indent: str, width: int = 100) -> str:
    import textwrap

    return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent + "  ")
