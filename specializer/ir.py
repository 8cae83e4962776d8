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

from . import codegen
from .errors import UserError


def context() -> llvm.ContextRef:
    codegen._init()
    return llvm.create_context()


def parse(text: str, where: str, ctx: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    """Parse and verify; a syntax error becomes one line: `where:LINE:COL: error: message`."""
    ctx = ctx or context()
    try:
        mod = llvm.parse_assembly(text, context=ctx)
        mod.verify()
    except RuntimeError as e:
        msg = str(e)
        m = re.search(r"<string>:(\d+):(\d+): error: (.*)", msg)
        if m:
            raise UserError(f"{where}:{m.group(1)}:{m.group(2)}: error: {m.group(3)}") from None
        detail = " ".join(line.strip() for line in msg.splitlines()[1:3] if line.strip())
        raise UserError(f"{where}: invalid IR: {detail or msg}") from None
    mod.name = Path(where).name
    return mod


def parse_bitcode(path: Path, ctx: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    ctx = ctx or context()
    try:
        return llvm.parse_bitcode(Path(path).read_bytes(), context=ctx)
    except RuntimeError as e:
        raise UserError(f"{path}: unreadable bitcode: {e}") from None
