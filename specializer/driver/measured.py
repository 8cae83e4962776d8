"""The one build-and-measure step: a variant of a model built into a directory, then (when the
model can run) its firmware run on QEMU, checked and counted. Every command that measures a
build goes through `build_and_measure`; each result is a named `Candidate`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specializer.inputs import Model
from specializer.optimize import variants
from specializer.optimize.state import BuildContext
from specializer.report.tables import VariantRow
from specializer import timing
from specializer.run import firmware, measure, profile
from specializer.driver import reuse as reuse_


@dataclass(frozen=True)
class Candidate:
    """One build of a variant and what measuring it gave."""
    variant: str
    unroll_threshold: int | None  # the threshold it was built with (None: LLVM's own)
    shape_only: frozenset  # all-args: the calls built by dims' rule
    build: variants.Build
    row: VariantRow  # the comparison's row (status "not run" for a model without inputs)
    measured: measure.Measured | None  # the run itself (None when not run)

    @property
    def dir(self) -> Path:
        return self.build.dir

    @property
    def passed(self) -> bool:
        return self.row.status == "pass"


def build_and_measure(model: Model, variant: str, out_dir: Path, options: variants.Options, *,
                      context: BuildContext | None = None, method: str = "plugin", timeout: float = 120,
                      annotate=None, say=lambda text: None, note: str = "",
                      function_profile: bool = True, contexts: bool = False, diff_text: bool = False,
                      reuse: bool = False) -> Candidate:
    """Variant `variant` of `model` built with `options` into `out_dir`, then run and measured when
    the model has a manifest (its inputs); with `function_profile`, the cost per function is
    written beside the build (profile.txt, profile.json: what the per-call choice reads);
    `contexts`: the run's profile counts every block per context in the entry (qemu.run);
    `diff_text`: each .ll of the build with its .diff.ll; `reuse`: a passing build kept in the build
    directory from an earlier run with the same inputs is copied instead of built (reuse.py; not
    with `annotate`, whose function the key cannot name)."""
    context = context or BuildContext.default()
    k = None
    if reuse and annotate is None:
        k = reuse_.key(model, variant, options, context, method=method, timeout=timeout,
                       function_profile=function_profile, contexts=contexts, diff_text=diff_text)
        with timing.phase("reuse (build cache)"):
            hit = reuse_.load(k, out_dir)
        if hit is not None:
            kept, d = hit
            say(f"reused an unchanged build{note}")
            b = variants.Build(variant, d, tuple(d / o for o in kept.objects))
            return Candidate(variant, kept.unroll_threshold, kept.shape_only, b, kept.row, None)
    c = _build_and_measure(model, variant, out_dir, options, context, method, timeout, annotate, say, note,
                           function_profile, contexts, diff_text)
    if k is not None and c.passed:
        with timing.phase("reuse (build cache)"):
            reuse_.store(k, out_dir, reuse_.Kept(c.row, tuple(o.name for o in c.build.objects),
                                                  c.unroll_threshold, c.shape_only))
    return c


def _build_and_measure(model, variant, out_dir, options, context, method, timeout, annotate, say, note,
                       function_profile, contexts, diff_text) -> Candidate:
    say(f"building{note}")
    b = variants.build(model, variant, out_dir, options, annotate=annotate, context=context,
                       diff_text=diff_text)
    s = options.specialize
    only = s.shape_only if variant == variants.ALL_ARGS else frozenset()
    spec = {}
    if b.specialized:
        spec = dict(clones=len(b.specialized.clones), refused=b.specialized.refused_by_budget,
                    unroll_threshold=s.unroll_threshold, shape_only=tuple(sorted(only)))
    if model.manifest is None:
        with timing.phase("footprint link"):
            fp = firmware.footprint(b.objects, sorted(model.keep, key=lambda k: (k not in model.entries, k)), b.dir)
        row = VariantRow(variant, "not run", fp.code, fp.const, fp.data, fp.bss, **spec,
                         lib_flash=fp.lib_flash, lib_ram=fp.lib_ram)
        return Candidate(variant, s.unroll_threshold, only, b, row, None)
    say(f"running on QEMU{note}")
    m = measure.measure(list(b.objects), model.manifest, b.dir, method=method, timeout=timeout, contexts=contexts)
    if function_profile and m.result.profile is not None:
        with timing.phase("function profile"):
            profile.write(profile.function_profile(m.firmware.elf, m.result.profile), b.dir)
    r = m.row
    row = VariantRow(variant, r.status, r.text, r.rodata, r.data, r.bss, r.insns,
                     r.cycles if method == "plugin" else None, r.max_abs_err, r.max_rel_err,
                     rtol=model.manifest.rtol, lib_flash=r.lib_flash, lib_ram=r.lib_ram, stack=r.stack, **spec)
    return Candidate(variant, s.unroll_threshold, only, b, row, m)
