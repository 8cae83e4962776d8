"""What the specializer reads: a captured model.ll (+ model.json), or one raw XLA CPU kernel module.

* A captured model (``specialize capture``): thumbv7em IR with an entry function and the
  manifest next to it; it can be run and checked on QEMU.
* An XLA CPU kernel dump (``*.ir-no-opt.ll``, x86-64): normalized and retargeted to thumbv7em;
  its kernels (``ptr @kernel(ptr %frame)``) are the entry points. No inputs, so nothing runs.
* A thumbv7em module without a manifest: its external functions are the entry points.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import inline_asm, intrinsics, ir
from .errors import UserError
from .manifest import Manifest
from .normalize import normalize
from .retarget import TRIPLE, retarget

OUR_TRIPLES = (TRIPLE, "thumbv7em-none-eabihf")
_TRIPLE = re.compile(r'^target triple = "([^"]*)"', re.M)
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


def _external_functions(text: str, where: str, kernels_only: bool) -> tuple[str, ...]:
    mod = ir.parse(text, where)
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
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    text = path.read_text()
    m = _TRIPLE.search(text)
    triple = m.group(1) if m else ""
    if triple in OUR_TRIPLES:
        return _thumb_module(path, text)
    looks_xla = path.name.endswith(".ir-no-opt.ll") or any(k in text for k in _XLA_MARKERS)
    if path.name.endswith(".ir-with-opt.ll"):
        raise UserError(f"{path}: XLA's optimized IR hard-codes x86-64 struct offsets; "
                        "pass the matching *.ir-no-opt.ll instead")
    if looks_xla:
        return _xla_kernels(path, text)
    ir.parse(text, str(path))  # a syntax error is reported as such, with line and column
    raise UserError(f"{path}: target triple is '{triple or '(none)'}', expected {TRIPLE} "
                    "(capture a model with 'specialize capture', or pass an XLA *.ir-no-opt.ll kernel dump)")


def _thumb_module(path: Path, text: str) -> Model:
    ir.parse(text, str(path))  # syntax errors first, as file:line:col
    text = _without_asm(path, text)
    manifest_path = path.with_name("model.json")
    if manifest_path.is_file():
        manifest = Manifest.load(manifest_path)
        defined = _external_functions(text, str(path), kernels_only=False)
        if manifest.entry not in defined:
            raise UserError(f"{path}: no entry point: {manifest_path.name} names '{manifest.entry}', "
                            "which the module does not define")
        keep = {manifest.entry} | {t.symbol for t in manifest.inputs + manifest.outputs}
        shapes = {t.symbol: (t.dtype, t.shape) for t in manifest.weights if t.offset == 0}
        return Model(path, manifest.function, "captured", text, (manifest.entry,), frozenset(keep),
                     manifest, shapes)
    entries = _external_functions(text, str(path), kernels_only=False)
    if not entries:
        raise UserError(f"{path}: no entry point: the module defines no external function "
                        "(and there is no model.json next to it)")
    return Model(path, path.stem, "module", text, entries, frozenset(entries))


def _without_asm(path: Path, text: str) -> str:
    """DSP inline asm -> LLVM intrinsics; other asm would abort llvmlite's LLVM at code emission."""
    if " asm " not in text:
        return text
    text = inline_asm.rewrite(text).text
    left = inline_asm.leftover(text)
    if left:
        raise UserError(f"{path}: function '{left[0].function}' uses inline assembly '{left[0].template}', "
                        "which llvmlite's LLVM cannot assemble; write it as LLVM IR or an llvm.arm.* intrinsic")
    return text


def _xla_kernels(path: Path, text: str) -> Model:
    text = retarget(normalize(text))
    wrappers = intrinsics.vector_wrappers(text)
    if wrappers:
        text += "\n" + wrappers
    entries = _external_functions(text, str(path), kernels_only=True)
    if not entries:
        raise UserError(f"{path}: no entry point: no XLA kernel (ptr @kernel(ptr %frame)) defined")
    name = path.name.split(".ir-no-opt.ll")[0] if path.name.endswith(".ir-no-opt.ll") else path.stem
    return Model(path, name, "xla-kernels", text, entries, frozenset(entries))
