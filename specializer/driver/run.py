"""`specialize run`: a captured model's lto build run and measured (run_model), and one function of
any module called on QEMU (run_entry, with run/rawrun.py's signature checks and return decoding)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from specializer import inputs
from specializer.driver.measured import build_and_measure
from specializer.errors import UserError
from specializer.inputs import Model
from specializer.llvm import emit, module
from specializer.optimize import variants
from specializer.run import cycles, faults, firmware, measure, qemu, rawrun, staticcheck


def run_model(model_ll: Path, workdir: Path, method: str = "plugin",
              timeout: float = 120) -> tuple[measure.Row, qemu.RunResult]:
    """The `lto` variant's build of a captured model, run and measured: the same object and the
    same accounting as that row of a comparison."""
    model = runnable(model_ll)
    workdir.mkdir(parents=True, exist_ok=True)
    c = build_and_measure(model, "lto", workdir, variants.Options(), method=method, timeout=timeout,
                          function_profile=False)
    return c.measured.row, c.measured.result


def runnable(model_ll: Path):
    """A captured model that can run: its model.ll parsed, its manifest present."""
    model_ll = Path(model_ll)
    model = inputs.load(model_ll)  # first: a bad .ll is reported before a missing manifest
    if model.manifest is None:
        raise UserError(f"{model_ll.with_name('model.json')}: manifest not found (capture writes it next to "
                        f"model.ll; without inputs 'specialize {model_ll}' reports sizes only; "
                        "'specialize run FILE.ll --entry NAME' calls one function of any module)")
    return model


def run_entry(model: Model, name: str, workdir: Path, method: str = "plugin", timeout: float = 120,
              max_insns: int = rawrun.DEFAULT_MAX_INSNS, warn: Callable[[str], None] = print) -> rawrun.EntryRow:
    """Build `model` as the lto variant with `name` as its only entry, run it once, measure it."""
    ticks = rawrun.limit_ticks(max_insns)
    entry = rawrun.find_entry(model, name)
    for w in staticcheck.null_accesses(model.text, str(model.path), name):
        warn(w)
    model = dataclasses.replace(model, entries=(name,), keep=frozenset({name}))
    workdir.mkdir(parents=True, exist_ok=True)
    b = variants.build(model, "lto", workdir)  # run by its own firmware (the entry's), not the model harness
    fw = firmware.build_with(list(b.objects), firmware.entry_io_source(name, ticks), name, workdir)
    fp = firmware.footprint(list(b.objects), [name], workdir)
    lay = faults.layout(fw.elf)
    asm = emit.emit_assembly(module.parse((workdir / "optimized.ll").read_text(), "optimized.ll"))
    for w in staticcheck.large_frames(asm, lay.stack[1] - lay.stack[0], str(model.path)):
        warn(w)
    try:
        result = qemu.run(fw.elf, start=fw.entry_addr, stop=fw.stop_addr, method=method, timeout=timeout)
    except qemu.LimitReached as e:
        raise UserError(f"{model.path}: '{name}' did not return within {max_insns:,} instructions "
                        f"(--max-insns; stopped at {e.where})") from None
    except qemu.Hang as e:
        raise UserError(f"{model.path}: '{name}' did not return within {e.seconds:g} seconds (--timeout); "
                        "QEMU was stopped") from None
    stack = measure.stack_used(result.stdout, fw.elf)
    if method == "plugin":
        est = cycles.estimate(result.profile)
        insns, cyc = est.insns, est.cycles
    else:
        insns, cyc = result.counter_insns, None
    return rawrun.EntryRow(name, entry.returns, rawrun.decode(result.stdout, entry.returns), fp.code, fp.const,
                           fp.data, fp.bss, fp.lib_flash, fp.lib_ram, stack, insns, cyc)
