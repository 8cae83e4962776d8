"""Modules in and out of LLVM: parse (and verify), read bitcode, link; each in a context of its own.

Named struct types live in an LLVM context and are never freed: parsing text that defines
`%struct.T` into a context that has seen `%struct.T` before (the global context, after an
earlier build in the same process) silently renames it `%struct.T.1`. Every artifact people
diff would then depend on what the process did before. So every module is parsed into a fresh
context unless the caller passes one (modules to be linked share one).
"""

from __future__ import annotations

import re
from pathlib import Path

import llvmlite.binding as llvm

from specializer.errors import UserError
from specializer.llvm import isolate, precheck

_initialized = False


def init() -> None:
    """LLVM's targets and assembly printers, once per process."""
    global _initialized
    if not _initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _initialized = True


class _Module(llvm.ModuleRef):
    """A module that does not free itself once its context is gone. LLVM frees a context's modules
    with the context, and Python's garbage collector finalizes the objects of a reference cycle in
    no set order (a module and its fresh context both held by a traceback's frames): a module
    finalized after its context must not be freed a second time (a segfault)."""

    def _dispose(self):
        if not self._context._closed:
            super()._dispose()


def _owned(mod: llvm.ModuleRef) -> llvm.ModuleRef:
    mod.__class__ = _Module
    return mod


def context() -> llvm.ContextRef:
    init()
    return llvm.create_context()


def parse(text: str, where: str, ctx: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    """Parse and verify IR text into `ctx` (else a fresh context); a syntax error becomes one line:
    `where:LINE:COL: message`."""
    ctx = ctx or context()
    try:
        mod = _owned(llvm.parse_assembly(text, context=ctx))
        mod.verify()
    except RuntimeError as e:
        msg = str(e)
        m = re.search(r"<string>:(\d+):(\d+): error: (.*)", msg)
        if m:
            raise UserError(f"{where}:{m.group(1)}:{m.group(2)}: error: {m.group(3)}") from None
        # the verifier's reason first ("Instruction does not dominate all uses!"), then what it names
        lines = [line.strip() for line in msg.splitlines() if line.strip()]
        detail = lines[0] + (f" ({'; '.join(lines[1:3])})" if len(lines) > 1 else "") if lines else msg
        raise UserError(f"{where}: invalid IR: {detail}") from None
    mod.name = Path(where).name
    return mod


def parse_input(text: str, where: str, ctx: llvm.ContextRef | None = None, scan: bool = True) -> llvm.ModuleRef:
    """`parse` for IR a user gave: constructs that would kill LLVM's Cortex-M4 backend are named
    first, and a trial parse + verify runs in a child process, so even a parser crash is one line."""
    if scan:
        precheck.check(text, where)

    def trial() -> None:
        parse(text, where)

    isolate.run(trial, f"parsing {where}")
    return parse(text, where, ctx)


def parse_bitcode(path: Path, ctx: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    ctx = ctx or context()
    try:
        return _owned(llvm.parse_bitcode(Path(path).read_bytes(), context=ctx))
    except RuntimeError as e:
        raise UserError(f"{path}: unreadable bitcode: {e}") from None


def link(modules: list[llvm.ModuleRef]) -> llvm.ModuleRef:
    """Link modules (of one context) in order into the first; a clash becomes a link error naming the symbol."""
    dst = modules[0]
    for src in modules[1:]:
        try:
            dst.link_in(src)
        except RuntimeError as e:
            raise UserError(f"link error: {str(e).strip().splitlines()[-1]}") from None
    return dst
