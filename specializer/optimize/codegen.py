"""llvmlite layer: parse, link, optimize and emit Thumb objects for Cortex-M4."""

from __future__ import annotations

import re
from pathlib import Path

import llvmlite.binding as llvm

from specializer import isolate, precheck
from specializer.errors import UserError
from specializer.capture.retarget import CPU, FEATURES, TRIPLE

_initialized = False


# The ARM load/store optimizer pairs adjacent word accesses into LDRD/STRD when it can prove
# 8-byte alignment (constant addresses let it, in all-args builds). On the Cortex-M4 (TRM 3.3)
# STRD costs 3 cycles where two STRs with an immediate offset cost 1 each, and LDRD 3 where two
# pipelined LDRs cost 3: the pairs never pay there. Measured: ResNet-8 all-args 41.72 M -> 41.55 M
# est. cycles, every variant a little faster.
#
# SelectionDAG scheduling in the IR's order for every function (-pre-RA-sched=source). That is
# already LLVM's choice for the Cortex-M4, whose machine scheduler reorders afterwards; it matters
# for functions built without that scheduler (libkernels/matmul_f32.c: the target feature
# -use-misched), which would otherwise get the register-pressure DAG scheduler and lose the
# order their loads were written in. Measured (all-args, est. cycles/MAC): docs/cost-model.md,
# "Code for these timings".
CODEGEN_OPTIONS = ("-arm-assume-misaligned-load-store", "-pre-RA-sched=source")


def _init() -> None:
    global _initialized
    if not _initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        for option in CODEGEN_OPTIONS:
            llvm.set_option("", option)
        _initialized = True


def target_machine(opt: int = 2) -> llvm.TargetMachine:
    _init()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=CPU, features=FEATURES, opt=opt, reloc="static",
                                        codemodel="default")


def parse(text: str, where: str, ctx: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    """Parse IR text (into `ctx`, else LLVM's global context); a syntax error becomes one line:
    `where:LINE:COL: message`."""
    _init()
    try:
        mod = llvm.parse_assembly(text, context=ctx)
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
        parse(text, where, llvm.create_context())

    isolate.run(trial, f"parsing {where}")
    return parse(text, where, ctx)


def parse_bitcode(path: Path, ctx: llvm.ContextRef | None = None) -> llvm.ModuleRef:
    _init()
    try:
        return llvm.parse_bitcode(Path(path).read_bytes(), context=ctx)
    except RuntimeError as e:
        raise UserError(f"{path}: unreadable bitcode: {e}") from None


def link(modules: list[llvm.ModuleRef]) -> llvm.ModuleRef:
    """Link modules in order into the first; a clash becomes a link error naming the symbol."""
    dst = modules[0]
    for src in modules[1:]:
        try:
            dst.link_in(src)
        except RuntimeError as e:
            raise UserError(f"link error: {str(e).strip().splitlines()[-1]}") from None
    return dst


# Symbols only the kernel library can provide (everything else undefined comes from libc/libm).
LIBRARY_PREFIXES = ("libjit_", "xla.", "arm_")


def check_library_symbols(mod: llvm.ModuleRef) -> None:
    """After linking with the libjit bitcode: a kernel the model calls but the library lacks is a
    link error naming the symbol (not a late 'undefined reference' from the final link)."""
    for f in mod.functions:
        if f.is_declaration and f.name.startswith(LIBRARY_PREFIXES) and not f.name.startswith("llvm."):
            raise UserError(f"link error: undefined symbol '{f.name}': the libjit bitcode does not define it")


def optimize(mod: llvm.ModuleRef, level: int = 2, tm: llvm.TargetMachine | None = None) -> None:
    """LLVM's standard -O<level> module pipeline, in place."""
    tm = tm or target_machine(level)
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)


def emit_object(mod: llvm.ModuleRef, tm: llvm.TargetMachine | None = None) -> bytes:
    tm = tm or target_machine()
    mod.triple = TRIPLE
    return isolate.run(lambda: tm.emit_object(mod), f"emitting Cortex-M4 code for {mod.name}")


def emit_assembly(mod: llvm.ModuleRef, tm: llvm.TargetMachine | None = None) -> str:
    tm = tm or target_machine()
    return isolate.run(lambda: tm.emit_assembly(mod).encode(),
                       f"emitting Cortex-M4 assembly for {mod.name}").decode()
