"""Plots from a small fixed report (no QEMU run): every plot is written, and byte-identical twice."""

import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from specializer.report import plots  # noqa: E402

DATA = Path(__file__).parent / "data" / "plots_report.json"  # report.Comparison rows + profile.json rows
VARIANTS = ["separate", "lto", "dims", "all-args"]
PNG = b"\x89PNG\r\n\x1a\n"


def _write(out: Path) -> list[Path]:
    data = json.loads(DATA.read_text())
    return plots.write_all(data, data["profiles"], out, VARIANTS)


def test_plots_are_written_and_byte_identical(tmp_path):
    first = _write(tmp_path / "a")
    assert [p.name for p in first] == ["summary.png", "softmax.png", "softmax-profile.png", "mlp.png",
                                       "mlp-profile.png"]
    for p in first:
        data = p.read_bytes()
        assert data.startswith(PNG) and len(data) > 5000, p
        assert b"Software" not in data and b"matplotlib" not in data  # no version or date stamped in
    second = _write(tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_profile_counts_clones_as_their_callee(tmp_path):
    data = json.loads(DATA.read_text())
    mlp = data["profiles"]["mlp"]
    # dims' two matmul clones make one bar, which differs from a plot with only the first clone
    one = plots.profile_plot("mlp", mlp, tmp_path / "one.png").read_bytes()
    fewer = {**mlp, "dims": [r for r in mlp["dims"] if r["name"] != "libjit_matmul_f32__spec1"]}
    assert plots.profile_plot("mlp", fewer, tmp_path / "two.png").read_bytes() != one
    assert plots._callee("libjit_matmul_f32__spec12") == "libjit_matmul_f32"  # reports made before hashed names
    assert plots._callee("libjit_matmul_f32.spec.0a1b2c3d") == "libjit_matmul_f32"
    assert plots._callee("libjit_matmul_f32.spec.0a1b2c3d.2") == "libjit_matmul_f32"
    assert plots.profile_plot("m", {"lto": []}, tmp_path / "none.png") is None  # nothing ran


def test_a_changed_number_changes_the_plot(tmp_path):
    data = json.loads(DATA.read_text())
    a = plots.model_plot(data["models"][0], tmp_path / "a.png").read_bytes()
    data["models"][0]["variants"][1]["cycles"] += 50_000
    assert plots.model_plot(data["models"][0], tmp_path / "b.png").read_bytes() != a
