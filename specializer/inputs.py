"""What the specializer reads: a captured model.ll (+ model.json), or one raw XLA CPU kernel module.

* A captured model (``specialize capture``): thumbv7em IR with an entry function and the
  manifest next to it; it can be run and checked on QEMU.
* An XLA CPU kernel dump (``*.ir-no-opt.ll``, x86-64): normalized and retargeted to thumbv7em;
  its kernels (``ptr @kernel(ptr %frame)``) are the entry points. No inputs, so nothing runs.
* A thumbv7em module without a manifest: its external functions are the entry points.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


from specializer.llvm import irtext, module, read, triples
from specializer.capture import fminmax, intrinsics

from specializer.library import inline_asm

from specializer.errors import UserError
from specializer.capture.manifest import Manifest
from specializer.capture.normalize import normalize
from specializer.capture.retarget import respell_target, retarget
from specializer.target import TARGET

_XLA_MARKERS = ("%XLA_CPU_KernelCallFrame", '!"xla_dylib_index"', "!xla_cpu_memory_region_name")


@dataclass(frozen=True)
class Model:
    path: Path
    name: str
    kind: str  # captured | xla-kernels | module
    text: str  # thumbv7em IR
    entries: tuple[str, ...]  # functions kept external
    keep: frozenset[str]  # every symbol kept external: entries and the buffers the harness uses
    manifest: Manifest | None = None
    shapes: dict = field(default_factory=dict)  # global symbol -> (dtype, shape), for the log

    @property
    def runnable(self) -> bool:
        return self.manifest is not None


def _parse(text: str, where: str):
    """A user's module, parsed so that nothing in it can kill the tool (see module.parse_input)."""
    mod = module.parse_input(text, where)
    read.check_defines(mod, where)
    return mod


def _external_functions(mod, kernels_only: bool) -> tuple[str, ...]:
    import llvmlite.binding as llvm

    found = []
    for f in mod.functions:
        if f.is_declaration or f.linkage not in (llvm.Linkage.external,) or f.name.startswith("llvm."):
            continue
        if kernels_only and str(f.global_value_type) != "ptr (ptr)":
            continue
        found.append(f.name)
    return tuple(found)


def load(path: Path) -> Model:
    path = Path(path)
    text = read.read(path)
    if path.name.endswith(".ir-with-opt.ll"):  # by its name, whatever it holds
        raise UserError(f"{path}: XLA's optimized IR hard-codes x86-64 struct offsets; "
                        "pass the matching *.ir-no-opt.ll instead")
    read.check_not_empty(text, str(path))
    triple = irtext.target_triple(text) or ""
    problem = triples.problem(triple)
    if problem is None:
        # any spelling of our target (thumbv7em-none-eabihf, armv7em-...) becomes the one we build for
        return _thumb_module(path, text if triple == TARGET.triple else respell_target(text))
    looks_xla = path.name.endswith(".ir-no-opt.ll") or any(k in text for k in _XLA_MARKERS)
    if looks_xla:
        return _xla_kernels(path, text)
    # a syntax error is reported as such, with line and column; then the target
    module.parse_input(text, str(path), scan=False)
    raise UserError(f"{path}: {problem}; expected {TARGET.triple} or another spelling of it "
                    "(capture a model with 'specialize capture', or pass an XLA *.ir-no-opt.ll kernel dump)")


def _thumb_module(path: Path, text: str) -> Model:
    text = _without_asm(path, text)  # DSP asm -> intrinsics before the checks that refuse asm
    mod = _parse(text, str(path))  # syntax errors first, as file:line:col of the user's file
    text = intrinsics.libjit_math(text)  # every exp on libjit's (intrinsics.py)
    json_path = manifest_path(path)
    if json_path.is_file():
        manifest = Manifest.load(json_path)
        defined = _external_functions(mod, kernels_only=False)
        if manifest.entry not in defined:
            raise UserError(f"{path}: no entry point: {json_path.name} names '{manifest.entry}', "
                            "which the module does not define")
        keep = {manifest.entry} | {t.symbol for t in manifest.inputs + manifest.outputs}
        return Model(path, manifest.function, "captured", text, (manifest.entry,), frozenset(keep),
                     manifest, tensor_shapes(manifest))
    entries = _external_functions(mod, kernels_only=False)
    if not entries:
        raise UserError(f"{path}: no entry point: the module defines no external function "
                        "(and there is no model.json next to it)")
    return Model(path, path.stem, "module", text, entries, frozenset(entries))


def manifest_path(path: Path) -> Path:
    """A captured model's manifest: model.json next to its model.ll."""
    return Path(path).with_name("model.json")


def tensor_shapes(manifest: Manifest) -> dict:
    """The model's weight symbols -> (dtype, shape)."""
    return {t.symbol: (t.dtype, t.shape) for t in manifest.weights if t.offset == 0}


def _without_asm(path: Path, text: str) -> str:
    """DSP inline asm -> LLVM intrinsics; other asm would abort llvmlite's LLVM at code emission."""
    return inline_asm.lowered(text, str(path)) if " asm " in text else text


def _xla_kernels(path: Path, text: str) -> Model:
    text = fminmax.lower(retarget(normalize(text)))
    text = intrinsics.libjit_math(text)  # the wrappers (append_to) and libjit's exp
    entries = _external_functions(_parse(text, str(path)), kernels_only=True)
    if not entries:
        raise UserError(f"{path}: no entry point: no XLA kernel (ptr @kernel(ptr %frame)) defined")
    name = path.name.split(".ir-no-opt.ll")[0] if path.name.endswith(".ir-no-opt.ll") else path.stem
    return Model(path, name, "xla-kernels", text, entries, frozenset(entries))
