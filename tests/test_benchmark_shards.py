"""CI's job matrix: scripts/benchmark.py --shard K/N runs a share of the models, --merge writes the
reports from the shards' results -- the same files, byte for byte, as one run over every model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHMARK = [sys.executable, str(Path(__file__).parents[1] / "scripts" / "benchmark.py")]
MODELS = ["softmax", "quadratic", "elementwise"]  # the reports list them in EXAMPLES' order


def _bench(tmp_path, *args):
    r = subprocess.run([*BENCHMARK, *args, "-o", str(tmp_path / "out"), "--unroll-threshold", "llvm"],
                       capture_output=True, text=True)
    return r


def _files(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_shards_merged_give_the_reports_of_one_run(tmp_path):
    whole = _bench(tmp_path, *MODELS, "--reports", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    for k in (1, 2):  # 3 models over 2 shards: quadratic and softmax, then elementwise
        r = _bench(tmp_path, *MODELS, "--shard", f"{k}/2", "--reports", str(tmp_path / "shards"))
        assert r.returncode == 0, r.stderr
    shard1 = json.loads((tmp_path / "shards" / "shard-1-of-2.json").read_text())
    assert [c["model"] for c in shard1["comparisons"]] == ["quadratic", "softmax"]
    assert not (tmp_path / "shards" / "variants.md").exists()  # a shard writes no report
    merged = subprocess.run([*BENCHMARK, "--merge", *sorted(map(str, (tmp_path / "shards").glob("shard-*.json"))),
                             "--reports", str(tmp_path / "merged")], capture_output=True, text=True)
    assert merged.returncode == 0, merged.stderr
    whole_files = _files(tmp_path / "whole")
    assert {"variants.md", "variants.json", "plots/summary.png"} <= set(whole_files)
    assert _files(tmp_path / "merged") == whole_files


def test_shards_of_different_runs_are_refused_in_one_line(tmp_path):
    a, b = tmp_path / "shard-1-of-2.json", tmp_path / "shard-2-of-2.json"
    base = {"options": {"max_growth": 2.0}, "environment": {"llvm": "20"}, "examples_run": True, "files_run": False,
            "comparisons": [], "failed": {}, "from_files": [], "files_failed": {}, "arenas": {}, "profiles": {}}
    a.write_text(json.dumps(base))
    b.write_text(json.dumps(base | {"options": {"max_growth": 3.0}}))
    r = subprocess.run([*BENCHMARK, "--merge", str(a), str(b), "--reports", str(tmp_path / "r")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "benchmark.py: error: --merge: shard-2-of-2.json: its options differ from shard-1-of-2.json's: "
        "shards of different runs"]
    assert not (tmp_path / "r").exists()


def test_a_model_whose_capture_fails_is_that_models_error(tmp_path, monkeypatch):
    """A cluster's task (benchmark._model): a model file that cannot be read is reported as that
    model's error, so the other models go on (the local run hands it on the same way)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("benchmark", BENCHMARK[1])
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "benchmark", bench)  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    bad = tmp_path / "broken.tflite"
    bad.write_bytes(b"not a flatbuffer")
    r = bench._model(("file", str(bad)), out=str(tmp_path / "out"), options=None, examples=1, jobs=1, reuse=False)
    assert r["comparison"] is None and "broken.tflite" in r["error"] and "\n" not in r["error"]
    assert r["text"].startswith("### broken\n\nerror: ")
