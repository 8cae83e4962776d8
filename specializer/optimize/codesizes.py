"""Code bytes of every function of a scratch module, as the specializing variants build it.

The per-call budget (specialize.py) sizes every round's candidate clones by building the whole
scratch module: O2 as the variant runs it, then Thumb code. Most of a round's functions come out
of O2 exactly as they did in the round before, in the other specializing variant, or in the last
run (the kernel library's untouched functions, clones kept from earlier rounds). Their code is
emitted again only if its text is new: a function's code bytes depend on nothing but its own IR
(with its attribute groups written out) and the code generator, so a function whose text was
sized before keeps its size and is left out of the object (`available_externally`: the machine
passes skip it). Sizes are kept in the build directory under the tool's digest (the passes, the
code generator's options, LLVM), shared by processes (cache.py) and never rewritten.

What could make one function's code depend on another -- merged globals -- happens at O2 only
for `minsize` functions, which are never taken from the memo.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from elftools.elf.elffile import ELFFile

from specializer import cache, tools
from specializer.llvm import emit, irtext, module, transforms
from specializer.optimize.specialize import CodeSizes

_SEEN: dict[str, int] = {}  # key -> code bytes, this process


def code_sizes(text: str, threshold: int | None = None, pre_unroll: bool = False) -> CodeSizes:
    """Code bytes and direct calls of every function of `text` after the specializing variants'
    optimization pipeline (the sizes the budget compares)."""
    mod = module.parse(text, "scratch.ll")
    transforms.constprop(mod, threshold, pre_unroll)
    transforms.optimize(mod, threshold)
    lines = str(mod).split("\n")
    spans = irtext.function_spans(lines)
    keys, calls = _functions(lines, spans)
    known = {f: n for f, k in keys.items() if k and (n := _recall(k)) is not None}
    irtext.declare_only(lines, spans, known)  # sized before: the code generator never sees its body
    # Always from the printed text: a function's code can depend on the order of its values'
    # uses, which printing does not keep. Each function in its own section, as the variants are
    # built: a branch to another function then never depends on how far away that one is.
    mod = module.parse(irtext.with_sections("\n".join(lines), data=False), "scratch.ll")
    sizes, data = _sized(emit.emit_object(mod, phase="codegen (sizing clones)"))
    for f, k in keys.items():
        if f not in known and k and f in sizes:
            _remember(k, sizes[f])
    return CodeSizes({**sizes, **known}, calls, data)


def _functions(lines: list[str], spans: dict) -> tuple[dict[str, str | None], dict[str, list[str]]]:
    """Each defined function's memo key (None: never from the memo) and its direct callees."""
    groups = irtext.attribute_groups("\n".join(line for line in lines if line.startswith("attributes #")))
    metadata = {int(m.group(1)): m.group(2) for line in lines if (m := _METADATA_DEF.match(line))}
    types = {m.group(1) for line in lines if (m := _TYPE_DEF.match(line))}
    keys, calls = {}, {}
    for name, (start, end) in spans.items():
        body = lines[start:end + 1]
        calls[name] = sorted({c for line in body if (c := irtext.callee(line))})
        fn = _canonical("\n".join(body), groups, metadata, types)
        keys[name] = None if irtext.has_keyword(fn, "minsize") else cache.digest(fn)
    return keys, calls


_METADATA_DEF = re.compile(r"^!(\d+) = (.*)$")
_METADATA_REF = re.compile(r"!(\d+)\b")
_TYPE_DEF = re.compile(r"^(%[-\w$.]+|%\"[^\"]*\") = type ")
_LOCAL_NAME = re.compile(r'^([-a-zA-Z$._][-\w$.]*|"[^"]*")(?=:)|%([-a-zA-Z$._][-\w$.]*|"[^"]*")', re.M)
_NOINLINE = re.compile(r"\bnoinline ?")
_PREDS = re.compile(r"\s*; preds = .*$", re.M)


def _canonical(fn: str, groups: dict, metadata: dict, types: set) -> str:
    """A function's text as its code depends on it: attribute groups written out, the metadata it
    reaches appended, and the names that only number things within one module (metadata ids,
    value and block names LLVM made unique with a counter) renumbered in order of appearance."""
    fn = _PREDS.sub("", fn)
    # noinline: the scratch module's own mark on clones and callees, no part of their code
    fn = irtext.ATTRIBUTE_REF.sub(lambda m: " {" + _NOINLINE.sub("", groups.get(int(m.group(1)), "?")) + "}", fn)
    ids: dict[int, int] = {}
    todo = [int(n) for n in _METADATA_REF.findall(fn)]
    while todo:
        n = todo.pop(0)
        if n not in ids:
            ids[n] = len(ids)
            todo.extend(int(r) for r in _METADATA_REF.findall(metadata.get(n, "")))
    renumber = lambda text: _METADATA_REF.sub(lambda m: f"!m{ids.get(int(m.group(1)), '?')}", text)
    names: dict[str, str] = {}

    def local(m: re.Match) -> str:  # a block label's definition, or a use of a named value
        name = m.group(1) or m.group(2)
        if m.group(2) and "%" + name in types:
            return m.group(0)
        names.setdefault(name, f"v{len(names)}")
        return ("%" if m.group(2) else "") + names[name]

    defs = [renumber(metadata.get(n, "")) for n in ids]
    return "\n".join([_LOCAL_NAME.sub(local, renumber(fn)), *defs])


def _sized(obj: bytes) -> tuple[dict[str, int], int]:
    """Code bytes per function symbol, and the bytes of the object's initialized data sections
    (every global's, whichever functions were left out)."""
    elf = ELFFile(io.BytesIO(obj))
    sizes = {}
    for s in elf.get_section_by_name(".symtab").iter_symbols():
        if s["st_info"]["type"] == "STT_FUNC":
            sizes[s.name] = sizes.get(s.name, 0) + s["st_size"]
    data = sum(sec["sh_size"] for sec in elf.iter_sections() if sec.name.startswith((".rodata", ".data")))
    return sizes, data


def _entry(key: str) -> Path:
    return tools.build_dir() / "sizes" / cache.tool_digest()[:16] / key[:2] / key


def _recall(key: str) -> int | None:
    if key not in _SEEN:
        try:
            _SEEN[key] = int(_entry(key).read_text())
        except (OSError, ValueError):
            return None
    return _SEEN[key]


def _remember(key: str, size: int) -> None:
    _SEEN[key] = size
    path = _entry(key)
    if not path.is_file():
        cache.publish(path, str(size).encode())  # whole or not at all: a reader never sees half
