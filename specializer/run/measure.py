"""Run a built model on QEMU and measure it: one result row (flash, RAM, stack, instructions, cycles)."""

from __future__ import annotations

import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from specializer import timing
from specializer.run import cycles, firmware, qemu, symbols
from specializer.errors import UserError
from specializer.capture.manifest import Manifest, np_dtype


@dataclass(frozen=True)
class Row:
    model: str
    status: str  # pass | FAIL
    max_abs_err: float
    max_rel_err: float
    text: int  # model and kernel library code
    rodata: int  # weights and constants
    data: int
    bss: int  # buffers: inputs, outputs, arena, scratch
    insns: int
    cycles: int | None  # None with method="icount": the counter gives no per-instruction profile to weigh
    lib_flash: int = 0  # libc/libm/libgcc code, constants and data image the model reaches
    lib_ram: int = 0  # ... and their .data + .bss
    stack: int | None = None  # peak stack of the measured call (bytes)

    @property
    def flash(self) -> int:
        return self.text + self.rodata + self.data + self.lib_flash

    @property
    def ram(self) -> int | None:
        return None if self.stack is None else self.data + self.bss + self.lib_ram + self.stack

    def as_dict(self) -> dict:
        return asdict(self) | {"flash": self.flash, "ram": self.ram}


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


_STACK = re.compile(r"^stack 0x([0-9a-f]{8}) 0x([0-9a-f]{8})$", re.M)


def stack_used(stdout: str, elf: Path) -> int:
    """Peak stack of the measured call, from the harness's scan of the painted free stack."""
    m = _STACK.search(stdout)
    if not m:
        raise UserError(f"firmware {elf.name} printed no 'stack <used> <free>' line")
    used, free = int(m.group(1), 16), int(m.group(2), 16)
    if used >= free:
        raise UserError(f"the model's stack reached the end of free RAM ({free:,} bytes between .bss and "
                        "the top of RAM) and overwrote static data: it needs less stack or smaller buffers")
    return used


def check(result: qemu.RunResult, manifest: Manifest) -> tuple[float, float, bool]:
    """errors() of the outputs a run printed; not ok unless the harness's own comparison agrees."""
    return check_vectors(result, [manifest])


_VECTOR = re.compile(r"^vector 0x([0-9a-f]{8}) 0x00000000$", re.M)


def check_vectors(result: qemu.RunResult, vectors: list[Manifest]) -> tuple[float, float, bool]:
    """errors() of every input's outputs a run printed (firmware.io_source's `vectors`; the
    first input's outputs come first, each other's after a `vector K` line)."""
    marks = list(_VECTOR.finditer(result.stdout))
    if [int(m.group(1), 16) for m in marks] != list(range(1, len(vectors))):
        raise UserError(f"firmware printed the outputs of {len(marks) + 1} of {len(vectors)} inputs")
    cuts = [0, *(m.start() for m in marks), len(result.stdout)]
    max_abs = max_rel = 0.0
    ok = result.exit_code == 0  # the harness's comparison and ours must agree; if not, trust neither
    for k, vec in enumerate(vectors):
        a, r, good = errors(read_outputs(result.stdout[cuts[k]:cuts[k + 1]], vec), vec)
        max_abs, max_rel, ok = max(max_abs, a), max(max_rel, r), ok and good
    return max_abs, max_rel, ok


@dataclass(frozen=True)
class Measured:
    row: Row
    result: qemu.RunResult
    firmware: firmware.Firmware
    footprint: firmware.Footprint


def roots(manifest: Manifest) -> list[str]:
    """The symbols a caller of the model uses: the entry, then its I/O buffers."""
    return [manifest.entry, *sorted({t.symbol for t in manifest.inputs + manifest.outputs})]


def measure(objects: Path | list[Path], manifest: Manifest, workdir: Path, method: str = "plugin",
            timeout: float = 120, contexts: bool = False) -> Measured:
    """Link the model object(s) with the harness, run on QEMU, check against the reference, count;
    the model's flash and static RAM from the model linked alone (firmware.footprint). The
    manifest's other vectors run on the same objects (icount: outputs only) and must pass too.
    `contexts`: the profile also counts every block per context in the entry (qemu.run's ctx)."""
    with timing.phase("firmware link"):
        fw = firmware.build(objects, manifest, workdir)
    with timing.phase("footprint link"):
        fp = firmware.footprint(objects, roots(manifest), workdir)
    ctx = None
    if contexts and method == "plugin":
        ctx = next((a, a + n) for a, n, name in symbols.functions(fw.elf) if name == manifest.entry)
    with timing.phase("qemu run"):
        result = qemu.run(fw.elf, start=fw.entry_addr, stop=fw.stop_addr, method=method, timeout=timeout, ctx=ctx)
    max_abs, max_rel, ok = check(result, manifest)
    if manifest.vectors:  # the same objects on the other inputs, one after another: outputs only
        vectors, where = [manifest.at(k) for k in range(len(manifest.vectors))], workdir / "vectors"
        with timing.phase("more inputs: link and run"):
            fw_v = firmware.build(objects, vectors[0], where, vectors=vectors[1:])
            more = check_vectors(qemu.run(fw_v.elf, start=fw_v.entry_addr, stop=fw_v.stop_addr, method="icount",
                                          timeout=timeout * len(vectors)), vectors)
        max_abs, max_rel, ok = max(max_abs, more[0]), max(max_rel, more[1]), ok and more[2]
        if more[2]:  # kept only to look into a failure
            shutil.rmtree(where)
    if method == "plugin":
        with timing.phase("cycle estimate"):
            est = cycles.estimate(result.profile)
        insns, cyc = est.insns, est.cycles
    else:
        insns, cyc = result.counter_insns, None
    row = Row(manifest.function, "pass" if ok else "FAIL", max_abs, max_rel, fp.code, fp.const, fp.data, fp.bss,
              insns, cyc, fp.lib_flash, fp.lib_ram, stack_used(result.stdout, fw.elf))
    return Measured(row, result, fw, fp)
