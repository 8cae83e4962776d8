"""Build a model.ll for Cortex-M4, run it on QEMU, and measure it: one result row."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from . import codegen, cycles, firmware, irtext, libjit, qemu, triples
from .errors import UserError
from .manifest import Manifest, np_dtype
from .retarget import TRIPLE


@dataclass(frozen=True)
class Row:
    model: str
    status: str  # pass | FAIL
    max_abs_err: float
    max_rel_err: float
    text: int
    rodata: int
    data: int
    bss: int
    insns: int
    cycles: int | None  # None with method="icount": the counter gives no per-instruction profile to weigh

    def as_dict(self) -> dict:
        return asdict(self)


def compile_model(model_ll: Path, workdir: Path) -> Path:
    """model.ll + libjit bitcode -> one optimized Thumb object (LLVM -O2)."""
    text = irtext.read(model_ll)
    irtext.check_not_empty(text, str(model_ll))
    mod = codegen.parse_input(text, str(model_ll))
    irtext.check_defines(mod, str(model_ll))
    problem = triples.problem(mod.triple)
    if problem:
        raise UserError(f"{model_ll}: {problem}; expected {TRIPLE} (capture a model with 'specialize capture')")
    mod.triple = TRIPLE  # any spelling of it (thumbv7em-none-eabihf, armv7em-...) is ours
    lib = codegen.parse_bitcode(libjit.build().bitcode)
    mod = codegen.link([mod, lib])
    codegen.check_library_symbols(mod)
    codegen.optimize(mod, 2)
    obj = workdir / "model.o"
    obj.write_bytes(codegen.emit_object(mod))
    return obj


_OUTPUT = re.compile(r"^output 0x([0-9a-f]{8}) 0x([0-9a-f]{8})$")


def read_outputs(stdout: str, manifest: Manifest) -> list[np.ndarray]:
    """The output dumps the harness printed, decoded into arrays."""
    lines = stdout.splitlines()
    outs = []
    i = 0
    while i < len(lines):
        m = _OUTPUT.match(lines[i].strip())
        i += 1
        if not m:
            continue
        nbytes = int(m.group(2), 16)
        words = []
        while len(words) * 4 < nbytes:
            words += [int(w, 16) for w in lines[i].split()]
            i += 1
        raw = np.asarray(words, dtype="<u4").tobytes()[:nbytes]
        t = manifest.outputs[int(m.group(1), 16)]
        outs.append(np.frombuffer(raw, dtype=np_dtype(t.dtype)).reshape(t.shape))
    if len(outs) != len(manifest.outputs):
        raise UserError(f"firmware printed {len(outs)} of {len(manifest.outputs)} outputs")
    return outs


def errors(got: list[np.ndarray], manifest: Manifest) -> tuple[float, float, bool]:
    """(max abs error, max rel error, within tolerance) over all outputs.

    Floats: NaN where the reference is NaN (either sign: x86 and Arm default NaNs differ in
    sign), inf of the same sign where it is inf, finite values within tolerance; errors are
    measured over the finite values, and a NaN or inf out of place is an infinite error.
    rel = |got - ref| / max(|ref|, atol): relative where the reference is not tiny."""
    max_abs = max_rel = 0.0
    ok = True
    for g, t in zip(got, manifest.outputs):
        ref = t.array()
        if ref.dtype.kind == "f" and ref.dtype.itemsize == 4:
            g64, r64 = g.astype(np.float64), ref.astype(np.float64)
            special = ~np.isfinite(r64)
            same_special = np.where(np.isnan(r64), np.isnan(g64), g64 == r64)
            if not np.all(same_special[special]):
                ok = False
                max_abs = max_rel = float("inf")
            finite = ~special
            diff = np.abs(g64[finite] - r64[finite])
            rel = diff / np.maximum(np.abs(r64[finite]), manifest.atol)
            if diff.size:
                with np.errstate(invalid="ignore"):
                    max_abs = max(max_abs, float(np.max(diff)) if np.isfinite(diff).all() else float("inf"))
                    max_rel = max(max_rel, float(np.max(rel)) if np.isfinite(rel).all() else float("inf"))
            ok &= bool(np.all(rel <= manifest.rtol))
        else:  # integers, and float types the harness compares bit for bit
            if ref.dtype.kind in "iub":
                diff = np.abs(g.astype(np.int64) - ref.astype(np.int64))
            else:
                diff = (np.ascontiguousarray(g).view(np.uint8) != np.ascontiguousarray(ref).view(np.uint8))
            if diff.size:
                max_abs = max(max_abs, float(diff.max()))
            ok &= bool(np.all(diff == 0))
    return max_abs, max_rel, ok


@dataclass(frozen=True)
class Measured:
    row: Row
    result: qemu.RunResult
    firmware: firmware.Firmware


def measure(objects: Path | list[Path], manifest: Manifest, workdir: Path, method: str = "plugin",
            timeout: float = 120) -> Measured:
    """Link the model object(s) with the harness, run on QEMU, check against JAX, count."""
    fw = firmware.build(objects, manifest, workdir)
    result = qemu.run(fw.elf, start=fw.entry_addr, stop=fw.stop_addr, method=method, timeout=timeout)
    got = read_outputs(result.stdout, manifest)
    max_abs, max_rel, ok = errors(got, manifest)
    harness_ok = result.exit_code == 0
    if ok != harness_ok:  # the two comparisons must agree; if not, trust neither
        ok = False
    if method == "plugin":
        est = cycles.estimate(result.profile)
        insns, cyc = est.insns, est.cycles
    else:
        insns, cyc = result.counter_insns, None
    row = Row(manifest.function, "pass" if ok else "FAIL", max_abs, max_rel,
              fw.model_sizes["text"], fw.model_sizes["rodata"], fw.model_sizes["data"],
              fw.model_sizes["bss"], insns, cyc)
    return Measured(row, result, fw)


def run_model(model_ll: Path, workdir: Path, manifest: Manifest | None = None,
              method: str = "plugin", timeout: float = 120) -> tuple[Row, qemu.RunResult]:
    model_ll = Path(model_ll)
    workdir.mkdir(parents=True, exist_ok=True)
    obj = compile_model(model_ll, workdir)  # first: a bad .ll is reported before a missing manifest
    manifest = manifest or Manifest.load(model_ll.with_name("model.json"))
    m = measure(obj, manifest, workdir, method=method, timeout=timeout)
    return m.row, m.result
