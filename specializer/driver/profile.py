"""`specialize run --profile`: the lto build of a captured model with line-table debug info, run on
QEMU, its cost attributed per kernel and HLO op (run/hloprofile.py), written as a table and JSON."""

from __future__ import annotations

from pathlib import Path

from specializer.capture import hlo_sites
from specializer.driver.measured import build_and_measure
from specializer.driver.run import runnable
from specializer.llvm import irtext
from specializer.optimize import variants
from specializer.report.profile_table import table
from specializer.run import debuginfo, mca as mca_mod
from specializer.run.hloprofile import Profiled, as_json, attribute, rows


def profile_model(model_ll: Path, workdir: Path, timeout: float = 120, mca: bool = False) -> Profiled:
    """The run's row (the same figures as without debug info: the code is the same) and the
    profile rows, also written to workdir/profile.txt and profile.json."""
    model_ll = Path(model_ll)
    model = runnable(model_ll)
    hlo = hlo_sites.load(model_ll.with_name(hlo_sites.FILE_NAME))
    file_name = f"{model.manifest.function}.hlo"
    lines: dict = {}

    def annotate(text: str) -> str:
        out, lines["sites"], lines["of_fn"] = debuginfo.attach(text, irtext.defined(model.text),
                                                               model.manifest.entry, hlo.calls if hlo else (), file_name)
        return out

    workdir.mkdir(parents=True, exist_ok=True)
    c = build_and_measure(model, "lto", workdir, variants.Options(), timeout=timeout, annotate=annotate,
                          function_profile=False)
    m = c.measured
    block_mca = mca_mod.block_cycles(m.firmware.elf, m.result.profile.blocks) if mca else None
    found = attribute(m.firmware.elf, m.result.profile, lines["sites"], lines["of_fn"], file_name, block_mca)
    rs = rows(found, lines["sites"], hlo, mca)
    (workdir / "profile.txt").write_text(table(rs))
    (workdir / "profile.json").write_text(as_json(rs, hlo))
    return Profiled(m.row, rs, hlo)
