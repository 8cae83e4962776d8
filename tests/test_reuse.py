"""An unchanged rerun reuses every build (reuse.py); a changed setting rebuilds only the variants
whose pipeline it is in; --no-cache builds everything; the output is the same either way."""

from __future__ import annotations

import os
import subprocess
import sys

from specializer.tools import build_dir

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]


def _run(model, out, *more):
    r = subprocess.run([*SPECIALIZE, model, "-o", out, "--variants", "lto,dims", "--unroll-threshold", "llvm",
                        "--json", "--progress", *more], capture_output=True, text=True,
                       env=os.environ | {"SPECIALIZER_BUILD_DIR": str(model.parent / "build")})
    assert r.returncode == 0, r.stderr
    reused = sorted(ln.split("]")[1].split(":")[0].strip() for ln in r.stderr.splitlines() if "reused" in ln)
    return r.stdout, reused, r.stderr  # stderr: each variant's progress, shown when an assertion fails


def _tree(d):
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_rerun_reuses_changed_setting_rebuilds_only_its_variants(captured, tmp_path):
    c = captured("mlp")
    model = tmp_path / "model.ll"
    model.write_bytes(c.model_ll.read_bytes())
    (tmp_path / "model.json").write_bytes(c.model_ll.with_name("model.json").read_bytes())
    # a build directory with no kept builds: the fetched sources, the library and plugin shared
    for d in build_dir().iterdir():
        if d.is_dir() and d.name != "builds" and not d.name.startswith("."):
            (tmp_path / "build").mkdir(exist_ok=True)
            (tmp_path / "build" / d.name).symlink_to(d)

    # (dims was once seen rebuilt on the unchanged rerun, cause not found: the messages keep the progress)
    first, reused, said = _run(model, tmp_path / "a")
    assert reused == [], said
    again, reused, said = _run(model, tmp_path / "b")
    assert reused == ["dims", "lto"] and again == first, said
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")  # every artifact, byte for byte
    # the size budget is in dims' pipeline, not lto's
    _, reused, said = _run(model, tmp_path / "c", "--max-growth", "3")
    assert reused == ["lto"], said
    fresh, reused, said = _run(model, tmp_path / "d", "--no-cache")
    assert reused == [] and fresh == first and _tree(tmp_path / "d") == _tree(tmp_path / "a"), said
