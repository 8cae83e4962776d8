"""The paired dataset: for a generated program, every stage from Python to cycles, per variant.

One program (`fuzz.program(seed)`) gives one row per variant: the Python source, its jaxpr, XLA's
HLO text (before XLA's optimizations: what `jax.jit(f).lower(...)` hands XLA), the captured
model.ll (XLA's LLVM IR retargeted to the Cortex-M4), the variant's pass pipeline, its optimized
IR (diff-oriented text: stable names, see difftext.py), and what the build measured on QEMU:
flash, RAM, instructions, est. cycles, and pass/fail against JAX. A program capture refuses gives
its rows with status `refused` and the refusal, and no IR. Shards of rows are Parquet files
(pyarrow), written whole by `write_shard`; the same seeds give the same bytes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from specializer import cache
from specializer.errors import UserError

# column -> Arrow type name; docs/dataset.md describes each
COLUMNS = {
    "seed": "int64", "variant": "string", "status": "string", "detail": "string",
    "source": "string", "jaxpr": "string", "hlo": "string", "model_ll": "string",
    "pipeline": "string", "optimized_ir": "string",
    "flash": "int64", "ram": "int64", "insns": "int64", "cycles": "int64",
}


def schema():
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in COLUMNS.items()])


def program_rows(seed: int, work: str) -> list[dict]:
    """Program `seed` captured, built in every variant and run on QEMU, as rows (a campaign's task:
    here or on a cluster's worker). Its working directory is removed afterwards."""
    import jax
    import numpy as np

    from specializer import inputs
    from specializer.capture.capture import capture
    from specializer.driver import fuzz
    from specializer.driver.compare import compare
    from specializer.optimize import variants
    from specializer.report import irdiff

    d = Path(work) / f"p{seed}"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    source = "\n".join(fuzz.HEADER) + fuzz.program(seed, "f")
    (d / "prog.py").write_text(source)
    base = dict.fromkeys(COLUMNS) | {"seed": seed, "source": source}
    try:
        fn = fuzz._load(d / "prog.py").f
        args = [np.asarray(fn.example_inputs[k]) for k in ("x", "y")]
        base["jaxpr"] = str(jax.make_jaxpr(fn)(*args))
        base["hlo"] = jax.jit(fn).lower(*args).as_text(dialect="hlo")
        c = capture(d / "prog.py", "f", d / "capture", timeout=300)
        base["model_ll"] = c.model_ll.read_text()
        comp = compare(inputs.load(c.model_ll), d / "variants", variants.Options(), variants.VARIANTS, jobs=1)
    except Exception as e:  # noqa: BLE001 - a program's failure is its rows' status
        line = (str(e).strip().splitlines() or [type(e).__name__])[0]
        status = "refused" if isinstance(e, UserError) and fuzz._refused(e) else "error"
        shutil.rmtree(d, ignore_errors=True)
        return [base | {"variant": v, "status": status, "detail": line} for v in variants.VARIANTS]
    rows = []
    for r in comp.rows:
        b = d / "variants" / r.variant
        rows.append(base | {
            "variant": r.variant, "status": r.status, "detail": "",
            "pipeline": (b / "pipeline.txt").read_text().strip(),
            "optimized_ir": irdiff.load(b).text(),
            "flash": r.flash, "ram": r.ram, "insns": r.insns, "cycles": r.cycles})
    shutil.rmtree(d, ignore_errors=True)
    return rows


def program_task(item: tuple[int, str]) -> list[dict]:
    """`program_rows(seed, work)` for a campaign (one picklable argument)."""
    return program_rows(*item)


def write_shard(rows: list[dict], path: Path) -> Path:
    """`rows` (in seed, then variant order) as one Parquet file, published whole (cache.py)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(rows, schema=schema())
    with cache.publishing(path, ".parquet") as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return path
