"""The paired dataset (specializer/driver/dataset.py, scripts/dataset.py): Parquet shards with the
documented columns, byte-identical for the same rows; end to end (--slow): generated programs
through every variant, the same bytes on a second run, resumed where a run stopped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from specializer.driver import dataset

pa = pytest.importorskip("pyarrow", reason="pyarrow (the dataset extra) is absent")
pd = pytest.importorskip("pandas", reason="pandas is absent")

DATASET = [sys.executable, str(Path(__file__).parents[1] / "scripts" / "dataset.py")]


def _rows(seed: int) -> list[dict]:
    return [dict.fromkeys(dataset.COLUMNS) | {"seed": seed, "variant": v, "status": "pass", "source": f"def f{seed}",
                                              "flash": 100 + i, "cycles": None if i == 0 else 7 * i}
            for i, v in enumerate(("separate", "lto"))]


def test_shard_has_the_documented_columns_and_same_rows_same_bytes(tmp_path):
    a = dataset.write_shard(_rows(1) + _rows(2), tmp_path / "a.parquet")
    b = dataset.write_shard(_rows(1) + _rows(2), tmp_path / "b.parquet")
    assert a.read_bytes() == b.read_bytes()
    df = pd.read_parquet(a)
    assert list(df.columns) == list(dataset.COLUMNS)
    assert df["seed"].tolist() == [1, 1, 2, 2] and df["cycles"].isna().tolist() == [True, False, True, False]
    doc = (Path(__file__).parents[1] / "docs" / "dataset.md").read_text()
    for column, kind in dataset.COLUMNS.items():
        assert f"| `{column}` | {kind} |" in doc, column  # every column documented with its type


@pytest.mark.slow
def test_programs_end_to_end_deterministic_and_resumable(tmp_path):
    run = lambda out, *more: subprocess.run([*DATASET, "--seeds", "3:5", "--shard-size", "1", "-o", out, *more],  # noqa: E731
                                            capture_output=True, text=True)
    first = run(tmp_path / "a")
    assert first.returncode == 0, first.stderr
    shards = sorted((tmp_path / "a").glob("*.parquet"))
    assert [p.name for p in shards] == ["programs-000003-000003.parquet", "programs-000004-000004.parquet"]
    df = pd.read_parquet(tmp_path / "a")
    assert len(df) == 10 and set(df["variant"]) == {"separate", "lto", "llvm-funcspec", "dims", "all-args"}
    ok = df[df["status"] == "pass"]
    assert len(ok) >= 5 and (ok["cycles"] > 0).all() and ok["optimized_ir"].str.contains("define").all()
    assert ok["jaxpr"].str.contains("lambda").all() and ok["hlo"].str.startswith("HloModule").all()
    shards[1].unlink()  # an interrupted run: the second shard missing
    again = run(tmp_path / "a")
    assert again.returncode == 0 and "1 programs in 1 shards to write" in again.stderr
    second = run(tmp_path / "b")
    assert second.returncode == 0
    for p in sorted((tmp_path / "a").glob("*.parquet")):
        assert p.read_bytes() == (tmp_path / "b" / p.name).read_bytes(), p.name
