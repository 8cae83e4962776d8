"""Pass pipelines as text: `a,b{key=value,...},c`, in the manner of xDSL's `-p` and LLVM's `-passes=`.

Every step a linked variant takes is a pass (specializer/llvm/passes.py): a frozen dataclass
whose fields are its options (written with `-` in the text: `max_growth` is `max-growth`), living
in the module that implements it and listed here in PASSES, the one registry.
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

`linked.ll` is printed with LLVM's use-list order (link.py), so `opt` on a build's `linked.ll`
reproduces its `optimized.ll` byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, fields

from specializer import timing
from specializer.capture.fminmax import Fminmax
from specializer.capture.normalize import Normalize
from specializer.capture.retarget import Retarget
from specializer.errors import UserError
from specializer.library.inline_asm import InlineAsm
from specializer.llvm.passes import LINK, MODEL, MODULE, Pass
from specializer.llvm.transforms import O2, Cleanup, Constprop, LlvmFuncspec
from specializer.optimize import callsites
from specializer.optimize.bufalias import Bufalias
from specializer.optimize.link import Link
from specializer.optimize.relayout import RelayoutPass
from specializer.optimize.rounds import Specialize
from specializer.optimize.state import BuildContext, BuildState
from specializer.optimize.zeroweights import Zeroweights

# The one registry: every pass a pipeline text may name, in the order `help opt` lists them. The
# last four are what reading a module does (capture, inputs.py): as passes, `opt` runs them alone.
PASSES: dict[str, type[Pass]] = {p.name: p for p in (RelayoutPass, Link, Specialize, Bufalias, Constprop, O2,
                                                     LlvmFuncspec, Zeroweights, Cleanup,
                                                     Normalize, Retarget, Fminmax, InlineAsm)}


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
    if m["kind"] == "float":  # > 0, or >= its minimum (not: NaN too)
        too_small = not (value >= m["minimum"] if m["minimum"] is not None else value > 0)
    else:
        too_small = value < m["minimum"] if m["minimum"] is not None else False
    if too_small:
        raise UserError(f"pass pipeline: {where}: {_key(f)} takes {_spelling(f)}")
    return value


def _spelling(f) -> str:
    m = f.metadata
    what = {"bool": "true or false", "choice": " or ".join(m["choices"]),
            "calls": "call numbers joined by + (3+7+11)",
            "float": "a positive number" if m["minimum"] is None else f"a number >= {m['minimum']:g}"}.get(m["kind"])
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
    """Model passes, then at most one `link`, then module transforms; model passes alone rewrite
    the model (`opt -passes=relayout model.ll` prints what relayout made of it)."""
    links = [i for i, p in enumerate(pipeline) if p.stage == LINK]
    if len(links) > 1:
        raise UserError("pass pipeline: 'link' appears more than once")
    end = links[0] if links else 0
    model_only = all(p.stage == MODEL for p in pipeline)
    for i, p in enumerate(pipeline):
        if p.stage == MODEL and (i > end if links else not model_only):
            raise UserError(f"pass pipeline: '{p.name}' acts on the model before linking: it goes before 'link'")
        if p.stage == MODULE and links and i < end:
            raise UserError(f"pass pipeline: '{p.name}' acts on the linked module: it goes after 'link'")


def after_link(pipeline) -> tuple[Pass, ...]:
    """The steps that turn linked.ll into optimized.ll."""
    links = [i for i, p in enumerate(pipeline) if p.stage == LINK]
    return tuple(pipeline[links[0] + 1:]) if links else tuple(pipeline)


def needs_model(pipeline) -> bool:
    return any(p.stage != MODULE for p in pipeline)


def run(pipeline, state: BuildState) -> BuildState:
    check(pipeline)
    if needs_model(pipeline) and state.model is None:
        raise UserError(f"{state.where}: the pipeline links ('link') but the input is no model: give a model.ll "
                        "(model.json next to it), or only the steps after 'link' for a linked.ll")
    if needs_model(pipeline) and state.context is None:  # the caller gave none: the default's library
        state.context = BuildContext.default()
    for p in pipeline:
        with timing.phase(f"pass {p.name}"):
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
