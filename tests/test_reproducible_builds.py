"""Same input, same output, byte for byte, across processes: a model whose all-args build goes
through the per-call choice (two of its depthwise calls measure faster as dims clones, so
all-args is built again with them shape-only) is compared twice in fresh processes that differ in
hash seed, locale, temporary directory, working directory, output path and the number of builds
run at once (-j 3, then -j 1: parallel.py's promise). The reports, and every
build's specialized and optimized IR and firmware, must be the same bytes: a set or dict iterated
in hash order, a path or a time written into a build would show here."""

import json
import os
import subprocess
import sys

# a small depthwise-separable net (64 channels, as KWS): the all-args depthwise clones with constant
# addresses measure slower than dims' shared one, so the per-call choice has work to do
MODEL = '''
import jax.numpy as jnp
import numpy as np
from jax import lax

DN = ("NHWC", "HWIO", "NHWC")
C = 64


def mini_dscnn(x, w0, dw1, pw1, dw2, pw2):
    y = jnp.maximum(lax.conv_general_dilated(x, w0, (2, 2), "SAME", dimension_numbers=DN), 0.0)
    for dw, pw in ((dw1, pw1), (dw2, pw2)):
        y = jnp.maximum(lax.conv_general_dilated(y, dw, (1, 1), "SAME", dimension_numbers=DN,
                                                 feature_group_count=C), 0.0)
        y = jnp.maximum(lax.conv_general_dilated(y, pw, (1, 1), "VALID", dimension_numbers=DN), 0.0)
    return jnp.mean(y, axis=(1, 2))


rng = np.random.default_rng(4)
mini_dscnn.example_inputs = {"x": rng.normal(size=(1, 12, 8, 1)).astype(np.float32)}
mini_dscnn.weights = {"w0": (rng.normal(size=(3, 3, 1, C)) / 3).astype(np.float32)}
for i in (1, 2):
    mini_dscnn.weights[f"dw{i}"] = (rng.normal(size=(3, 3, 1, C)) / 3).astype(np.float32)
    mini_dscnn.weights[f"pw{i}"] = (rng.normal(size=(1, 1, C, C)) / 8).astype(np.float32)
'''

FILES = ("specialized.ll", "optimized.ll", "firmware.elf", "specialization.log", "profile.json")


def _compare(model_ll, where, seed, locale, jobs):
    """`specialize --all-args` (dims and all-args, no build reuse) in a fresh process."""
    run_dir, tmp = where / "cwd", where / "tmp"
    run_dir.mkdir(parents=True)
    tmp.mkdir()
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "LC_ALL": locale, "TMPDIR": str(tmp)}
    r = subprocess.run([sys.executable, "-m", "specializer.cli", str(model_ll), "-o", str(where / "out"), "--no-cache",
                        "--unroll-threshold", "1000", "--variants", "dims,all-args", "--json", "-j", str(jobs)],
                       cwd=run_dir, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout, where / "out"


def test_a_per_call_choice_build_is_the_same_bytes_in_another_process(tmp_path):
    from specializer.capture.capture import capture

    (tmp_path / "mini_dscnn.py").write_text(MODEL)
    c = capture(tmp_path / "mini_dscnn.py", "mini_dscnn", tmp_path / "cap")
    first, a = _compare(c.model_ll, tmp_path / "a", 1, "C", jobs=3)
    second, b = _compare(c.model_ll, tmp_path / "second-run-with-a-longer-path", 2, "C.UTF-8", jobs=1)
    rows = {r["variant"]: r for r in json.loads(first)["variants"]}
    assert rows["all-args"]["shape_only"], "the model no longer exercises the per-call choice"
    assert all(r["status"] == "pass" for r in rows.values())
    assert first == second
    assert (a / "report.json").read_bytes() == (b / "report.json").read_bytes()
    for variant in ("dims", "all-args"):
        for name in FILES:
            assert (a / variant / name).read_bytes() == (b / variant / name).read_bytes(), f"{variant}/{name}"
    # and every other file the comparison wrote (reports, IR, objects, profiles, the per-call rebuilds')
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert any(f.name == "optimized.ll" for f in files) and not (a / ".unroll").exists()
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
