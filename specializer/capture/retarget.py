"""Move an XLA kernel module from x86-64 to Cortex-M4 (thumbv7em, hard float).

Text in, text out, applied after `normalize`: new triple and datalayout, x86 function
attributes dropped, the per-dylib module flag dropped (kernels from several XLA dylibs are
linked into one module), and `!invariant.load` dropped (the entry function reuses buffers
across kernels, so a load is not invariant over the whole program).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specializer.llvm.passes import TextPass
from specializer.target import TARGET


_TRIPLE_LINE = re.compile(r'^target triple = "[^"]*"\n?', re.M)
_LAYOUT_LINE = re.compile(r'^target datalayout = "[^"]*"\n?', re.M)
_ATTR_GROUP = re.compile(r"^(attributes #\d+ = \{)([^}]*)(\})", re.M)
# String attributes ("target-cpu"="x86-64", "prefer-vector-width"="256", ...) all describe the
# host; uwtable asks for unwind tables we never use on a bare-metal target.
_STRING_ATTR = re.compile(r'\s*"[^"]*"(?:="[^"]*")?')
_DROPPED_KEYWORDS = re.compile(r"\s*\buwtable(?:\(\w+\))?")
_INVARIANT_LOAD = re.compile(r",\s*!invariant\.load\s+!\d+")
_MODULE_FLAGS = re.compile(r"^!llvm\.module\.flags = !\{([^}]*)\}\n?", re.M)


def _clean_attr_groups(text: str) -> str:
    """Strip host attributes; a group left empty is removed with every `#N` naming it."""
    emptied = []

    def clean(m: re.Match) -> str:
        body = _DROPPED_KEYWORDS.sub("", _STRING_ATTR.sub("", m.group(2))).strip()
        if body:
            return f"{m.group(1)} {body} {m.group(3)}"
        emptied.append(re.search(r"#\d+", m.group(1)).group(0))
        return ""

    text = _ATTR_GROUP.sub(clean, text)
    for ref in emptied:
        text = re.sub(r" " + ref + r"\b", "", text)
    return text


def _drop_module_flag(text: str, key: str) -> str:
    node = re.search(r'^(!\d+) = !\{i32 \d+, !"' + re.escape(key) + r'", [^}]*\}\n?', text, re.M)
    if node is None:
        return text
    text = text[: node.start()] + text[node.end() :]

    def keep(m: re.Match) -> str:
        refs = [r.strip() for r in m.group(1).split(",") if r.strip() and r.strip() != node.group(1)]
        return f"!llvm.module.flags = !{{{', '.join(refs)}}}\n" if refs else ""

    return _MODULE_FLAGS.sub(keep, text)


def set_target(text: str) -> str:
    """Our triple and datalayout, in place of whatever the module had."""
    text = _LAYOUT_LINE.sub("", text)
    text = _TRIPLE_LINE.sub("", text)
    header = f'target datalayout = "{TARGET.datalayout}"\ntarget triple = "{TARGET.triple}"\n'
    # after the ModuleID/source_filename lines, where LLVM prints them
    lines = text.split("\n")
    at = 0
    while at < len(lines) and (lines[at].startswith("; ModuleID") or lines[at].startswith("source_filename")):
        at += 1
    return "\n".join(lines[:at] + [header.rstrip("\n")] + lines[at:])


def respell_target(text: str) -> str:
    """Our triple and datalayout for a module already for Cortex-M4 under another spelling, with
    every line where it was: errors LLVM reports later must point into the user's file."""
    text = re.sub(r'^target datalayout = "[^"]*"', "", text, flags=re.M)
    return re.sub(r'^target triple = "[^"]*"', f'target datalayout = "{TARGET.datalayout}" target triple = "{TARGET.triple}"',
                  text, count=1, flags=re.M)


def retarget(text: str) -> str:
    text = _clean_attr_groups(set_target(text))
    text = _INVARIANT_LOAD.sub("", text)
    return _drop_module_flag(text, "xla_dylib_index")


@dataclass(frozen=True)
class Retarget(TextPass):
    name = "retarget"
    summary = ("an x86-64 XLA kernel module moved to Cortex-M4: the target's triple and datalayout, host "
               "attributes, the xla_dylib_index flag and !invariant.load dropped (capture/retarget.py; "
               "after normalize)")
    rewrite = staticmethod(retarget)
