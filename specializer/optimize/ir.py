"""Parsing IR into a private LLVM context, so printed IR depends on the input alone.

Named struct types live in an LLVM context and are never freed: parsing text that defines
`%struct.T` into a context that has seen `%struct.T` before (the global context, after an
earlier build in the same process) silently renames it `%struct.T.1`. Every artifact people
diff would then depend on what the process did before. So every stage of the specializer
parses into a fresh context (modules to be linked share one).
"""

from __future__ import annotations

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
