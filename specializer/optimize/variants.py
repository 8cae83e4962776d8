"""The five builds every comparison makes of one model, each into its own directory.

| variant         | what it is |
|-----------------|------------|
| `separate`      | model.ll optimized alone at O2 -> model.o; the libjit bitcode optimized alone at O2 ->
|                 | libjit.o; linked by the linker |
| `lto`           | model + libjit linked into one module, internalized, O2, no explicit specialization |
| `llvm-funcspec` | `lto` with LLVM's own FunctionSpecialization forced on in O2's IPSCCP (no cost model,
|                 | literal constants and global addresses allowed, 16 clones per function): the peer |
| `dims`          | `lto` + call sites specialized the way Glow does by default: constant scalars and
|                 | pointers to constant non-tensor data (no addresses, no floats); constprop, O2 |
| `all-args`      | `lto` + call sites specialized on every constant argument, and on pointers to stack
|                 | objects that hold only constants (CMSIS instance structs); constprop, O2 |

Every object is emitted with a section per function, so the linker's --gc-sections keeps what
the entry reaches, as with a library built with -ffunction-sections (for `separate` that keeps
the unused kernels of libjit.o out; for the others, unused libcall targets). libjit.o also has
a section per global (-fdata-sections: unused tables are dropped); the model objects do not
need that (their globals are all used).

Objects are compiled from the printed IR re-parsed (what optimized.ll holds), not from the
module in memory: the two differ in use-list order, which steers some backend heuristics
(measured: LeNet's lto object differs, and runs 3% more instructions compiled from the
re-parsed module than from the one in memory; re-parsing again changes nothing). An object
that optimized.ll reproduces is what a person diffing IR needs.

Artifacts (text, byte-identical when the same input is built twice):
`linked.ll` (linked, internalized, dead code dropped: what the specializer sees),
`specialized.ll` (after the last specialization round, before the final constprop and O2;
rounds after the first see the constprop of the ones before), `optimized.ll`, `pipeline.txt`
(the passes after `link`: `specialize opt -passes="$(cat pipeline.txt)" linked.ll` rebuilds
optimized.ll; pipeline.py), and `specialization.log` / `specialization.json`, and next to each
`.ll` its diff-oriented text when asked for (`optimized.diff.ll`, ...: difftext.py; `--diff-text`).
`separate` writes
`optimized.ll` of the model module alone (its pipeline.txt runs on model.ll).

Each variant is nothing but its pass pipeline: PIPELINES, one table of pipeline texts, with
the comparison's settings (Options) written into the passes' fields by `pipeline_for`, printed
by `specialize --print-pipeline`; `linked.ll` is printed with LLVM's use-list order so that the
pipeline rerun on it gives the same optimized.ll. The unroll threshold applies to the specializing
variants only: `separate` and `lto` are what LLVM's defaults give.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import llvmlite.binding as llvm

from specializer.errors import UserError
from specializer.inputs import Model
from specializer.llvm import emit, irtext, module, packweights, transforms
from specializer.llvm.transforms import O2, Constprop
from specializer import cache, timing
from specializer.tools import build_dir
from specializer.optimize import difftext, pipeline
from specializer.optimize.link import Link
from specializer.optimize.relayout import RelayoutPass
from specializer.optimize.rounds import (DEFAULT_FLASH_BUDGET, DEFAULT_MAX_GROWTH, DEFAULT_ROUNDS,  # noqa: F401 (the CLI's defaults)
                                         Specialize)
from specializer.optimize.speclog import Specialized
from specializer.optimize.state import BuildContext, BuildState

# The one table: each variant is the pipeline it runs (pipeline.py). `separate` runs its
# pipeline on the model alone (and O2 on the libjit bitcode alone); the specializing variants
# get the comparison's settings written into their passes' fields (pipeline_for). Zero weights
# are visible once O2 has unrolled and folded the loads.
DIMS, ALL_ARGS = "dims", "all-args"  # the two specializing variants (and specialize's two modes)
PIPELINES = {
    "separate": "O2",
    "lto": "link,O2",
    "llvm-funcspec": "link,llvm-funcspec",
    DIMS: f"link,specialize{{mode={DIMS}}},constprop,O2",
    ALL_ARGS: f"relayout,link,specialize{{mode={ALL_ARGS}}},bufalias,constprop,O2,zeroweights",
}
VARIANTS = tuple(PIPELINES)
SPECIALIZING = (DIMS, ALL_ARGS)

# The unroll thresholds a comparison tries in the specializing variants, keeping the one that
# measures fewer est. cycles (None: LLVM's own, 150 at O2). Once specialization has made trip
# counts constant, unrolling them pays on f32 kernels (kws_dscnn dims 11.61M -> 10.77M est.
# cycles at 1000, mobilenet_vww 4.20 -> 4.05 cycles/MAC) but costs on CMSIS-NN's int8 code
# (kws_int8 dims 8.55M -> 11.48M at 500 and up: register spills in the unrolled SMLAD loops);
# no threshold between does both (300: 11.55M / 9.03M). The growth factor and the flash
# budget bound what each candidate adds.
DEFAULT_UNROLL_CANDIDATES = (None, 1000)


def unroll_setting(text: str) -> tuple[int | None, tuple]:
    """`--unroll-threshold`'s value as (the unroll threshold, Options.unroll_candidates):
    a number, 'llvm' (LLVM's own) or 'auto' (measure DEFAULT_UNROLL_CANDIDATES)."""
    t = text.strip().lower()
    if t == "auto":
        return None, DEFAULT_UNROLL_CANDIDATES
    if t == "llvm":
        return None, ()
    try:
        n = int(t)
    except ValueError:
        raise ValueError(f"not an unroll threshold: '{text}' (a number, 'llvm' or 'auto')") from None
    if n < 0:
        raise ValueError("--unroll-threshold must be >= 0")
    return n, ()


@dataclass(frozen=True)
class Options:
    """A comparison's settings: the `specialize` pass its specializing variants run -- the options
    themselves are that pass's fields, written once (rounds.py) -- and the unroll thresholds the
    comparison measures at. `pipeline_for` writes them into every pass of a variant that reads
    them (the unroll threshold into constprop and O2, shape-only calls into relayout)."""
    specialize: Specialize = Specialize()
    # a comparison builds and measures the specializing variants at each of these thresholds
    # and keeps the fastest (compare.py); empty: `specialize.unroll_threshold` only. Builds that
    # are not measured (-S, bundle) use `specialize.unroll_threshold`.
    unroll_candidates: tuple = DEFAULT_UNROLL_CANDIDATES

    @classmethod
    def of(cls, unroll_candidates: tuple = DEFAULT_UNROLL_CANDIDATES, **specialize) -> Options:
        """Options from the `specialize` pass's fields by name (max_growth=, unroll_threshold=, ...)."""
        return cls(Specialize(**specialize), tuple(unroll_candidates))

    def but(self, **specialize) -> Options:
        """These options with some of the `specialize` pass's fields changed."""
        return replace(self, specialize=replace(self.specialize, **specialize))

    def as_dict(self) -> dict:
        """The settings by name, as reports record them."""
        s = self.specialize
        return {"max_growth": s.max_growth, "unroll_threshold": s.unroll_threshold,
                "unroll_candidates": self.unroll_candidates, "rounds": s.rounds, "pre_unroll": s.pre_unroll,
                "flash_budget": s.flash_budget, "shape_only": s.shape_only}


@dataclass(frozen=True)
class Build:
    variant: str
    dir: Path
    objects: tuple[Path, ...]  # every object that makes up the model (all counted in its size)
    specialized: Specialized | None = None


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _write_ir(path: Path, text: str, diff_text: bool, spec: Specialized | None = None) -> Path:
    """A module's text and, with `diff_text`, next to it its diff-oriented text (difftext.py;
    `spec`'s clones labeled). Rendering walks every instruction (2 s per kws_dscnn file): only
    when asked for; `specialize diff-ir` renders its own from the .ll."""
    if diff_text:
        with timing.phase("diff-oriented IR"):
            difftext.write(difftext.diff_path(path), text, path.name,
                           difftext.clone_notes(spec.sites) if spec else None)
    return _write(path, text)


# libjit.o by the library bitcode and the tool that compiles it: `separate` compiles the same
# library for every model, so it is made once
# per build directory (cache.py, shared by processes) and kept in memory for a process that
# builds many models (scripts/fuzz.py).
_LIBRARY_OBJECTS: dict[str, bytes] = {}


def _library_object(path: Path, context: BuildContext) -> Path:
    path.write_bytes(library_object(context))
    return path


def library_object(context: BuildContext) -> bytes:
    """libjit.o's bytes, made once per build directory (setup.sh makes it: its O2 and code
    generation, single-threaded, took 25 s, which the first comparisons of a test run waited
    for, one building and the others holding the lock)."""
    bitcode = context.library.bitcode
    key = cache.digest(cache.file_digest(bitcode), cache.tool_digest())
    if key not in _LIBRARY_OBJECTS:
        def make(tmp: Path) -> None:
            with timing.phase("kernel library object (O2)"):
                lib = module.parse_bitcode(bitcode)
                transforms.optimize(lib)
            _emit(lib, tmp, data_sections=True)

        _LIBRARY_OBJECTS[key] = cache.made(build_dir() / "objects" / f"libjit-{key[:24]}.o", make).read_bytes()
    return _LIBRARY_OBJECTS[key]


def _emit(mod, path: Path, data_sections: bool = False) -> Path:
    """The object, with a section per function (and per global with `data_sections`)."""
    with timing.phase("sections (print, parse)"):
        mod = module.parse(irtext.with_sections(str(mod), data_sections), path.name)
    path.write_bytes(emit.emit_object(mod))
    return path


# --------------------------------------------------------------------------- the builds


@dataclass
class Optimized:
    """One variant's module after its whole optimization (what its object is emitted from)."""
    module: llvm.ModuleRef
    linked: str  # the linked module the specializer saw (text, with its use-list order: pipeline.py)
    spec: Specialized | None = None  # dims / all-args: the specialization rounds
    relaid: tuple = ()  # all-args: weights re-laid out (relayout.py)
    zero_weights: int = 0  # all-args: multiply-adds by a constant zero dropped (zeroweights.py)
    aliases: tuple = ()  # all-args: buffer addresses given symbols of their own (bufalias.py)
    pipeline: tuple = ()  # the passes that ran (pipeline.py)
    packed: dict = field(default_factory=dict)  # weights `module` holds as bytes (BuildState.packed)

    def text(self) -> str:
        """The optimized module's text, its weights typed (what optimized.ll holds)."""
        return packweights.unpack(str(self.module), self.packed)

    def log_text(self) -> str:
        head = "".join(f"; {r.log_line()}\n" for r in self.relaid)
        if self.aliases:
            head += f"; buffer addresses as symbols (bufalias.py): {', '.join('@' + a for a in self.aliases)}\n"
        if self.zero_weights:
            head += (f"; zero weights: {self.zero_weights} multiply-adds by a constant 0.0 dropped "
                     "(zeroweights.py)\n")
        return head + (self.spec.log_text() if self.spec else "")


def pipeline_for(variant: str, options: Options = Options()) -> tuple:
    """The passes that define `variant`: PIPELINES[variant] with `options` in its passes' fields
    (the specializing variants only: `separate`, `lto` and `llvm-funcspec` are LLVM's defaults).
    What `--print-pipeline` prints and a build runs."""
    if variant not in VARIANTS:
        raise UserError(f"unknown variant '{variant}' (have: {', '.join(VARIANTS)})")
    steps = pipeline.parse(PIPELINES[variant])
    if variant not in SPECIALIZING:
        return steps
    spec = replace(options.specialize, mode=variant, rounds=max(1, options.specialize.rounds),
                   shape_only=options.specialize.shape_only if variant == ALL_ARGS else frozenset())
    t = spec.unroll_threshold
    fields = {Constprop: dict(unroll_threshold=t, unroll=spec.pre_unroll), O2: dict(unroll_threshold=t),
              RelayoutPass: dict(shape_only=spec.shape_only)}
    return tuple(spec if isinstance(step, Specialize) else replace(step, **fields.get(type(step), {}))
                 for step in steps)


def optimized(model: Model, variant: str, options: Options = Options(), annotate=None,
              context: BuildContext | None = None) -> Optimized:
    """The optimized module of one of the linked variants (every variant but `separate`): its
    pipeline printed as text and what that text parses to run on the model.
    `annotate(text) -> text` rewrites the linked module before the steps after `link`: the
    profile's debug info (debuginfo.py)."""
    p = pipeline
    steps = p.parse(p.to_text(pipeline_for(variant, options)))
    s = BuildState.of_model(model, context or BuildContext.default())
    if annotate is None:
        p.run(steps, s)
    else:
        cut = next(i for i, step in enumerate(steps) if isinstance(step, Link)) + 1
        p.run(steps[:cut], s)
        s.set_text(annotate(s.as_text()))
        p.run(steps[cut:], s)
    return Optimized(s.as_module(), s.linked, s.spec, s.relaid, s.zero_weights, s.aliases, steps, s.packed)


def build(model: Model, variant: str, out_dir: Path, options: Options = Options(),
          data_sections: bool = False, annotate=None, context: BuildContext | None = None,
          diff_text: bool = False) -> Build:
    """Build one variant of `model` into `out_dir`: artifacts and object(s). `data_sections`: the
    model object gets a section per global too (.rodata.<weight>, .bss.<buffer>), as a bundle
    wants them for placing weights and buffers; `diff_text`: each .ll with its .diff.ll."""
    if variant not in VARIANTS:
        raise UserError(f"unknown variant '{variant}' (have: {', '.join(VARIANTS)})")
    p = pipeline
    context = context or BuildContext.default()
    out_dir.mkdir(parents=True, exist_ok=True)
    if variant == "separate":  # annotate: the model module alone (the library has no debug info)
        steps = p.parse(p.to_text(pipeline_for(variant, options)))
        text = model.text if annotate is None else annotate(model.text)
        mod = p.run(steps, BuildState(model.path.name, str(model.path), text)).as_module()
        _write_ir(out_dir / "optimized.ll", str(mod), diff_text)
        _write(out_dir / "pipeline.txt", p.to_text(steps) + "\n")
        objs = (_emit(mod, out_dir / "model.o", data_sections), _library_object(out_dir / "libjit.o", context))
        return Build(variant, out_dir, objs)

    o = optimized(model, variant, options, annotate, context)
    _write_ir(out_dir / "linked.ll", o.linked, diff_text)
    _write(out_dir / "pipeline.txt", p.to_text(p.after_link(o.pipeline)) + "\n")
    if o.spec is None:
        _write_ir(out_dir / "optimized.ll", o.text(), diff_text)
        return Build(variant, out_dir, (_emit(o.module, out_dir / "model.o", data_sections),))
    _write_ir(out_dir / "specialized.ll", o.spec.text, diff_text, o.spec)
    _write(out_dir / "specialization.log", o.log_text())
    _write(out_dir / "specialization.json", o.spec.log_json())
    if o.relaid:
        _write(out_dir / "relayout.json", json.dumps([asdict(r) for r in o.relaid], indent=1, sort_keys=True) + "\n")
    mod, spec = o.module, o.spec
    _write_ir(out_dir / "optimized.ll", o.text(), diff_text, spec)
    return Build(variant, out_dir, (_emit(mod, out_dir / "model.o", data_sections),), spec)
