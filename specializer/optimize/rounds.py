"""`specialize`: call sites specialized in rounds, constant propagation between them.

The pass that makes the dims and all-args variants (specialize.py does one round); its
fields are the options a comparison's specializing variants are built with (variants.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from specializer.llvm import module, packweights, transforms
from specializer.llvm.passes import THRESHOLD_HELP, Pass, option
from specializer.optimize.callsites import calls_option
from specializer.optimize.codesizes import code_sizes
from specializer.optimize.speclog import Specialized, merge
from specializer.optimize.specialize import specialize
from specializer.optimize.state import BuildState
from specializer.target import TARGET

DEFAULT_MAX_GROWTH = 2.0
DEFAULT_ROUNDS = 8
DEFAULT_FLASH_BUDGET = TARGET.flash_bytes - 64 * 1024  # the target's flash less room for harness, libc and libm

@dataclass(frozen=True)
class Specialize(Pass):
    name = "specialize"
    summary = ("clone each callee per distinct set of constant arguments at its call sites, in rounds with "
               "constprop between them until no new clone (specialize.py); its output is specialized.ll")
    mode: str = option("dims", "dims: constant scalars and pointers to constant non-tensor data (Glow's "
                       "default); all-args: every constant argument", "choice", choices=("dims", "all-args"))
    rounds: int = option(DEFAULT_ROUNDS, "at most this many rounds", "int", minimum=1)
    max_growth: float | None = option(DEFAULT_MAX_GROWTH, "the clones of a callee may add at most X "
                                      "times its code", "float", none="none")
    flash_budget: int | None = option(DEFAULT_FLASH_BUDGET, "code + data bytes the scratch build may "
                                      "take", "int", none="none", minimum=1)
    unroll_threshold: int | None = option(None, THRESHOLD_HELP + " in the sizing build and between rounds",
                                          "int", none="llvm", minimum=0)
    pre_unroll: bool = option(False, "unroll loops in constprop between rounds too", "bool")
    shape_only: frozenset = calls_option("specializes by dims' rule (with the calls inside their clones)")

    def run(self, state: BuildState) -> None:
        spec = specialize_rounds(state.as_text(), self, state.shapes, f"{state.name} ({self.mode})")
        state.spec = replace(spec, text=state.typed(spec.text))
        state.name = state.where = "specialized.ll"
        state.set_text(spec.text)


def specialize_rounds(text: str, options: Specialize, shapes: dict | None = None,
                      where: str = "module.ll") -> Specialized:
    """Specialize, propagate constants, and specialize again what became constant.

    Round 1 sees the constants at the call sites of the linked module; constant propagation
    and inlining then turn arguments inside the clones into constants (a kernel's own helper
    calls), which round 2 specializes, and so on, for at most `options.rounds` rounds or until
    a round makes no clone. The result's text is the last round's output, before the final
    constprop and O2. The model's float weights go round as bytes (packweights.py): a build's
    `link` packed them already; here the rest, e.g. `specialize opt` on a linked.ll with its
    manifest, where no link ran."""
    packed = packweights.pack(text, shapes or ())
    text = packed.text
    threshold = options.unroll_threshold
    rounds: list[Specialized] = []
    skip: frozenset = frozenset()
    dims_callers: frozenset = frozenset()
    for r in range(1, max(1, options.rounds) + 1):
        if rounds:
            mod = module.parse(text, where)
            transforms.constprop(mod, threshold, options.pre_unroll)
            text = str(mod)
        number = sum(len(x.sites) for x in rounds) + 1
        spec = specialize(text, options.mode, max_growth=options.max_growth, flash_budget=options.flash_budget,
                          sizer=lambda t: code_sizes(t, threshold, options.pre_unroll), shapes=shapes, where=where,
                          round=r, first_number=number, skip=skip,
                          reserved=frozenset(c for x in rounds for c in x.clones),
                          earlier=tuple(s for x in rounds for s in x.sites),
                          shape_only=options.shape_only, dims_callers=dims_callers,
                          before=rounds[-1].sizing if rounds else None)
        dims_callers = dims_callers | frozenset(s.clone for s in spec.sites if s.shape_only and s.clone)
        rounds.append(spec)
        text = spec.text
        skip = skip | spec.refused_keys()
        if not spec.clones:
            break
    spec = merge(rounds)
    return replace(spec, text=packweights.unpack(spec.text, packed.typed))
