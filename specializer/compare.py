"""Build every variant of one model, run each on QEMU, and collect the comparison.

One directory per variant under the output directory (artifacts: see variants.py), plus
per-function profiles (profile.py) and the comparison itself as report.md / report.json.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from . import files, firmware, macs, measure, profile, report, variants
from .inputs import Model
from .report import Comparison, VariantRow


def compare(model: Model, out_dir: Path, options: variants.Options = variants.Options(),
            which: tuple[str, ...] = variants.VARIANTS, method: str = "plugin",
            timeout: float = 120, progress=None) -> Comparison:
    """`progress(text)`, when given, hears each step as it starts (the CLI prints it on stderr)."""
    say = progress or (lambda text: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, v in enumerate(which, 1):
        say(f"[{i}/{len(which)}] {v}: building")
        b = variants.build(model, v, out_dir / v, options)
        spec = {}
        if b.specialized:
            spec = dict(clones=len(b.specialized.clones), refused=b.specialized.refused_by_budget)
        if model.manifest is None:
            fp = firmware.footprint(b.objects, sorted(model.keep, key=lambda k: (k not in model.entries, k)), b.dir)
            rows.append(VariantRow(v, "not run", fp.code, fp.const, fp.data, fp.bss, **spec,
                                   lib_flash=fp.lib_flash, lib_ram=fp.lib_ram))
            continue
        say(f"[{i}/{len(which)}] {v}: running on QEMU")
        m = measure.measure(list(b.objects), model.manifest, b.dir, method=method, timeout=timeout)
        if m.result.profile is not None:
            profile.write(profile.function_profile(m.firmware.elf, m.result.profile), b.dir)
        r = m.row
        rows.append(VariantRow(v, r.status, r.text, r.rodata, r.data, r.bss, r.insns,
                               r.cycles if method == "plugin" else None, r.max_abs_err, r.max_rel_err,
                               rtol=model.manifest.rtol, lib_flash=r.lib_flash, lib_ram=r.lib_ram, stack=r.stack,
                               **spec))
    opts = asdict(options) | {"method": method}
    c = Comparison(model.name, model.kind, tuple(rows), opts, macs.count(model.text) or None)
    files.write_all([(out_dir / "report.md", report.table(c) + "\n" + report.NOTE + "\n"),
                     (out_dir / "report.json", report.json_text(c))])
    return c
