"""LLVM pass pipelines (llvmlite's new pass manager): internalize, constant propagation + unrolling, O2.

The stages a specialized build goes through (see variants.py for the order):

* ``internalize``: every definition but the kept symbols (entry points, buffers the harness
  reads and writes, and libcall targets: see LIBCALLS) becomes internal, then ``globaldce``
  drops what nothing kept reaches.
  Only internal functions can be specialized, inlined away or dropped.
* ``constprop``: after the specializer has rewritten call sites: IPSCCP, the always-inliner
  (it inlines each clone's call of the original, so the constants land in the body), SROA,
  SCCP, InstCombine, SimplifyCFG, (optionally loop rotation + unrolling), cleanup, GlobalOpt,
  GlobalDCE.
* ``optimize``: LLVM's standard O2 module pipeline; it unrolls the loops whose trip counts the
  constants made known (full unrolling up to the threshold).

Unrolling control (checked on llvmlite 0.50 / LLVM 22.1): ``PipelineTuningOptions`` has an
on/off switch (``loop_unrolling``) but no threshold. LLVM's loop unroller takes its threshold
from the ``-unroll-threshold`` cl::opt, which ``llvm.set_option('', '-unroll-threshold=N')``
sets. It can be set any number of times in one process -- the last value wins for every pass
run after it (measured: a 64-iteration loop stays rolled at 150, fully unrolls at 500/1000/2000,
rolls again after going back to 150). It is process-global state, though, and once given,
LLVM uses it instead of its own default (150 at O2, 300 at O3; the ARM cost model does not
change the threshold for Cortex-M). ``unroll_threshold()`` therefore sets it for the duration
of one pipeline and puts LLVM's O2 default back afterwards, so an unset threshold means "LLVM's
default" for every other build in the same process. Per-loop ``llvm.loop.unroll.*`` metadata
would be the alternative; it needs no global state but has to be attached to every loop.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import llvmlite.binding as llvm

from specializer.llvm import emit, options
from specializer.llvm.passes import THRESHOLD_HELP, ModuleState, Pass, option

# LLVM's loop unroll threshold at O2 (UnrollThresholdDefault in LoopUnrollPass.cpp).
DEFAULT_UNROLL_THRESHOLD = int(options.DEFAULTS["unroll-threshold"])

_KEEP_LINKAGES = {llvm.Linkage.internal, llvm.Linkage.private, llvm.Linkage.appending}

# Functions the code generator may call although no IR calls them: an intrinsic such as
# llvm.roundeven.f32 or llvm.memcpy becomes a libcall only at instruction selection. A
# definition of one (libjit defines roundevenf, which newlib lacks) must stay external, or
# internalize + globaldce drop it and the final link fails. Unused ones cost nothing: every
# object is emitted with a section per function and linked with --gc-sections.
LIBCALLS = frozenset(
    [f"{base}{suffix}" for base in ("roundeven", "rint", "nearbyint", "round", "floor", "ceil", "trunc",
                                    "fma", "sqrt", "exp", "exp2", "exp10", "log", "log2", "log10", "pow",
                                    "sin", "cos", "tan", "fmin", "fmax", "fminimum", "fmaximum", "fmod",
                                    "ldexp", "frexp", "copysign", "lround", "llround", "lrint", "llrint")
     for suffix in ("f", "")] + ["memcpy", "memmove", "memset", "bzero"])


# LLVM's own FunctionSpecialization (run inside IPSCCP in the O2 pipeline) with its cost model
# switched off, literal constants and addresses of non-constant globals allowed, and more clones
# per function than its default 3: the `llvm-funcspec` peer variant. Its cl::opts are process-global
# like the unroll threshold, so they are set for one pipeline and put back to LLVM 22's defaults.
FUNCSPEC_FORCED = {"force-specialization": "true", "funcspec-for-literal-constant": "true",
                   "funcspec-on-address": "true", "funcspec-max-clones": "16"}


def _libcall(name: str) -> bool:
    return name in LIBCALLS or name.startswith("__aeabi_")


@contextmanager
def unroll_threshold(threshold: int | None):
    """Run the enclosed passes with LLVM's -unroll-threshold set (None: LLVM's default)."""
    if threshold is None:
        yield
        return
    if threshold < 0:
        raise ValueError("unroll threshold must be >= 0")
    with options.scoped({"unroll-threshold": str(int(threshold))}):
        yield


@contextmanager
def llvm_funcspec(forced: bool):
    """Run the enclosed passes with LLVM's FunctionSpecialization forced on (FUNCSPEC_FORCED)."""
    if not forced:
        yield
        return
    with options.scoped(FUNCSPEC_FORCED):
        yield


def _run(mod: llvm.ModuleRef, add_passes, tm: llvm.TargetMachine | None = None) -> None:
    tm = tm or emit.target_machine()
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
    pm = llvm.create_new_module_pass_manager()
    add_passes(pm)
    pm.run(mod, pb)


def internalize(mod: llvm.ModuleRef, keep: set[str] | frozenset[str]) -> list[str]:
    """Make every definition not in `keep` internal, then drop the unreachable ones.

    Returns the kept symbols that the module defines (the entry points found)."""
    found = []
    for fn in mod.functions:
        if fn.is_declaration or fn.name.startswith("llvm."):
            continue
        if fn.name in keep:
            found.append(fn.name)
        elif fn.linkage not in _KEEP_LINKAGES and not _libcall(fn.name):
            fn.linkage = llvm.Linkage.internal
    for g in mod.global_variables:
        if g.is_declaration or g.name.startswith("llvm.") or g.name in keep:
            continue
        if g.linkage not in _KEEP_LINKAGES:
            g.linkage = llvm.Linkage.internal
    _run(mod, lambda pm: pm.add_global_dead_code_eliminate_pass())
    return found


def constprop(mod: llvm.ModuleRef, threshold: int | None = None, unroll: bool = False,
              tm: llvm.TargetMachine | None = None) -> None:
    """Constant propagation, inlining of the clones' always-inline calls, cleanup; with
    unroll=True also loop rotation + unrolling here, before O2.

    By default loops are left to O2's own unrolling (full unrolling in its loop pipeline, then
    partial/runtime unrolling; both use the threshold), which sees them after SROA, EarlyCSE
    and LICM. Unrolling here as well, on loops O2 has not cleaned up yet, unrolls more
    (partially and at run time too, as the ARM cost model asks for on Cortex-M). Measured on the
    bundled models: the same cycles within a percent or two (geometric mean 0.902 vs 0.904 of
    `separate` for dims), but larger code (geometric mean 0.922 vs 0.870; softmax +74%), so it is
    off unless asked for (--pre-unroll)."""

    def add(pm):
        pm.add_ipsccp_pass()
        pm.add_always_inliner_pass()
        pm.add_sroa_pass()
        pm.add_sccp_pass()
        pm.add_instruction_combine_pass()
        pm.add_simplify_cfg_pass()
        if unroll:
            pm.add_loop_rotate_pass()
            pm.add_loop_unroll_pass()
        pm.add_instruction_combine_pass()
        pm.add_simplify_cfg_pass()
        pm.add_global_opt_pass()
        pm.add_global_dead_code_eliminate_pass()

    with unroll_threshold(threshold):
        _run(mod, add, tm)


def optimize(mod: llvm.ModuleRef, threshold: int | None = None,
             tm: llvm.TargetMachine | None = None, funcspec: bool = False) -> None:
    """LLVM's standard O2 module pipeline (with the given unroll threshold; with `funcspec`, its
    FunctionSpecialization forced on)."""
    tm = tm or emit.target_machine(2)
    with unroll_threshold(threshold), llvm_funcspec(funcspec):
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
        pb.getModulePassManager().run(mod, pb)


def cleanup(mod: llvm.ModuleRef) -> None:
    """InstCombine and dead-code elimination: what folds a rewrite done after O2 (zeroweights)."""
    def add(pm):
        pm.add_instruction_combine_pass()
        pm.add_dead_code_elimination_pass()
        pm.add_simplify_cfg_pass()

    _run(mod, add)


# --------------------------------------------------------------------------- as pipeline passes


@dataclass(frozen=True)
class Constprop(Pass):
    name = "constprop"
    summary = ("IPSCCP, always-inliner (the clones' calls), SROA, SCCP, InstCombine, SimplifyCFG, GlobalOpt, "
               "GlobalDCE (transforms.constprop)")
    unroll_threshold: int | None = option(None, THRESHOLD_HELP, "int", none="llvm", minimum=0)
    unroll: bool = option(False, "also rotate and unroll loops here (--pre-unroll)", "bool")

    def run(self, state: ModuleState) -> None:
        constprop(state.as_module(), self.unroll_threshold, self.unroll)


@dataclass(frozen=True)
class O2(Pass):
    name = "O2"
    summary = "LLVM's standard O2 module pipeline"
    unroll_threshold: int | None = option(None, THRESHOLD_HELP, "int", none="llvm", minimum=0)

    def run(self, state: ModuleState) -> None:
        optimize(state.as_module(), self.unroll_threshold)


@dataclass(frozen=True)
class LlvmFuncspec(Pass):
    name = "llvm-funcspec"
    summary = ("O2 with LLVM's FunctionSpecialization forced on in its IPSCCP: "
               + ", ".join(f"-{k}={v}" for k, v in FUNCSPEC_FORCED.items()))

    def run(self, state: ModuleState) -> None:
        optimize(state.as_module(), funcspec=True)


@dataclass(frozen=True)
class Cleanup(Pass):
    name = "cleanup"
    summary = "InstCombine, DCE, SimplifyCFG (transforms.cleanup)"

    def run(self, state: ModuleState) -> None:
        cleanup(state.as_module())
