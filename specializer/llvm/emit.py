"""Thumb objects and assembly for the target's core (target.py), from a module."""

from __future__ import annotations

import llvmlite.binding as llvm

from specializer import timing
from specializer.llvm import isolate, module, options
from specializer.target import TARGET

# The ARM load/store optimizer pairs adjacent word accesses into LDRD/STRD when it can prove
# 8-byte alignment (constant addresses let it, in all-args builds). On the Cortex-M4 (TRM 3.3)
# STRD costs 3 cycles where two STRs with an immediate offset cost 1 each, and LDRD 3 where two
# pipelined LDRs cost 3: the pairs never pay there. Measured: ResNet-8 all-args 41.72 M -> 41.55 M
# est. cycles, every variant a little faster.
#
# SelectionDAG scheduling in the IR's order for every function (pre-RA-sched=source). That is
# already LLVM's choice for the Cortex-M4, whose machine scheduler reorders afterwards; it matters
# for functions built without that scheduler (libkernels/matmul_f32.c: the target feature
# -use-misched), which would otherwise get the register-pressure DAG scheduler and lose the
# order their loads were written in (measured, all-args est. cycles/MAC: docs/cost-model.md, "Code
# for these timings"). Both act in code generation only (machine passes), so they are set around
# emission.
CODEGEN_OPTIONS = {"arm-assume-misaligned-load-store": "true", "pre-RA-sched": "source"}


def target_machine(opt: int = 2) -> llvm.TargetMachine:
    module.init()
    target = llvm.Target.from_triple(TARGET.triple)
    return target.create_target_machine(cpu=TARGET.cpu, features=TARGET.features, opt=opt, reloc="static",
                                        codemodel="default")


def emit_object(mod: llvm.ModuleRef, tm: llvm.TargetMachine | None = None, phase: str = "codegen") -> bytes:
    """The module's object; `phase` names the time it takes (specialize -v)."""
    tm = tm or target_machine()
    mod.triple = TARGET.triple
    with options.scoped(CODEGEN_OPTIONS), timing.phase(phase):
        return isolate.run(lambda: tm.emit_object(mod), f"emitting Cortex-M4 code for {mod.name}")


def emit_assembly(mod: llvm.ModuleRef, tm: llvm.TargetMachine | None = None) -> str:
    tm = tm or target_machine()
    with options.scoped(CODEGEN_OPTIONS), timing.phase("codegen (assembly)"):
        return isolate.run(lambda: tm.emit_assembly(mod).encode(),
                           f"emitting Cortex-M4 assembly for {mod.name}").decode()
