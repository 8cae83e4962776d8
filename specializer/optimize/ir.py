"""Parsing IR into a private LLVM context, so printed IR depends on the input alone.

Named struct types live in an LLVM context and are never freed: parsing text that defines
`%struct.T` into a context that has seen `%struct.T` before (the global context, after an
earlier build in the same process) silently renames it `%struct.T.1`. Every artifact people
diff would then depend on what the process did before. So every stage of the specializer
parses into a fresh context (modules to be linked share one).
"""

from __future__ import annotations

import re
from pathlib import Path

import llvmlite.binding as llvm

from specializer.optimize import codegen


def context() -> llvm.ContextRef:
    codegen._init()
    return llvm.create_context()


def parse(text: str, where: str, ctx: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    """codegen.parse into `ctx` or a fresh context."""
    return codegen.parse(text, where, ctx or context())


def parse_bitcode(path: Path, ctx: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    return codegen.parse_bitcode(path, ctx or context())


# --------------------------------------------------------------------------- names in IR text

_BARE_NAME = re.compile(r"^[-a-zA-Z$._][-a-zA-Z$._0-9]*$")
_DEFINE = re.compile(r'^define [^@]*@("(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+)\(')


def quote(name: str) -> str:
    """`@name` as LLVM prints it (quoted when it has characters outside the bare set)."""
    if _BARE_NAME.match(name):
        return "@" + name
    return '@"' + name.replace("\\", "\\5C").replace('"', "\\22") + '"'


def unquote(ref: str) -> str:
    """A name as printed after `@` (`foo`, `"a b\\22"`) -> the name itself."""
    if ref.startswith('"'):
        return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), ref[1:-1])
    return ref


def define_name(line: str) -> str | None:
    """The function a `define` line defines (None for any other line)."""
    m = _DEFINE.match(line)
    return unquote(m.group(1)) if m else None


def defined(text: str) -> list[str]:
    """The functions `text` defines, in module order."""
    return [n for n in map(define_name, text.split("\n")) if n is not None]
