"""`specialize diff-ir` on a three-layer model captured with one layer edited: the diff names only
that layer's functions and globals, and the other layers' clones keep their names."""

import json
import subprocess
import sys

import pytest

from specializer.report import irdiff

from specializer import inputs

from specializer.optimize import variants
from specializer.capture.capture import capture

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]
MODEL = '''import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)


def mlp3(x, w1, w2, w3):
    h = jnp.maximum(x @ w1, 0.0)
    h = jnp.maximum(h @ w2, 0.0)
    return h @ w3


mlp3.example_inputs = {"x": rng.normal(size=(1, 8)).astype(np.float32)}
mlp3.weights = {"w1": rng.normal(size=(8, 16)).astype(np.float32) / 4,
                "w2": rng.normal(size=(16, 16)).astype(np.float32) / 4,
                "w3": rng.normal(size=(16, 4)).astype(np.float32) / 4}
'''
EDITS = {
    "base": "",
    # layer 2: other weight values, same shapes
    "w2": 'mlp3.weights["w2"] = mlp3.weights["w2"] * 0.5\n',
    # layer 1: 80% of the weights zero, so all-args re-lays them out for a sparse kernel: the
    # layer calls another kernel and its matmul clone is gone (with numbered clones, every
    # later layer's clone was renamed)
    # layer 3: 5 outputs instead of 4
    "w3": 'mlp3.weights["w3"] = np.concatenate([mlp3.weights["w3"], mlp3.weights["w3"][:, :1]], axis=1)\n',
    "w1": 'mlp3.weights["w1"] = np.where(np.arange(128).reshape(8, 16) % 5 == 0, mlp3.weights["w1"], 0)'
          '.astype(np.float32)\n',
}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Each edit of the model captured and built all-args: name -> build directory."""
    root = tmp_path_factory.mktemp("diffir")
    out = {}
    for name, edit in EDITS.items():
        src = root / f"{name}.py"
        src.write_text(MODEL + edit)
        c = capture(src, "mlp3", root / name)
        out[name] = variants.build(inputs.load(c.model_ll), "all-args", root / name / "all-args",
                                   diff_text=name == "base").dir
    return out


def layer_clones(build_dir, weight: str) -> set[str]:
    """The clones made for one layer: specialized on its weights, or called from such a clone."""
    sites = json.loads((build_dir / "specialization.json").read_text())["sites"]
    mine, grew = set(), True
    while grew:
        grew = False
        for s in sites:
            if s["clone"] and s["clone"] not in mine and (
                    s["caller"] in mine or any(f"@{weight}" in a["summary"] for a in s["const"])):
                mine.add(s["clone"])
                grew = True
    return mine


def changes(a, b) -> dict:
    d = irdiff.compare_modules(irdiff.load(a), irdiff.load(b))
    return {(c.status, c.name): c for c in d.changes}


def test_new_weights_in_one_layer_change_only_that_layer(builds):
    got = changes(builds["base"], builds["w2"])
    layer2 = {"@mlp3_w_w2"} | {"@" + c for c in layer_clones(builds["w2"], "mlp3_w_w2")}
    assert ("changed", "@mlp3_w_w2") in got  # the weights' hash
    assert {name for _, name in got} <= layer2, sorted(got)
    assert {status for status, _ in got} == {"changed"}


def test_a_wider_last_layer_changes_only_the_last_layer(builds):
    got = changes(builds["base"], builds["w3"])
    layer3 = {"@" + c for c in layer_clones(builds["base"], "mlp3_w_w3") | layer_clones(builds["w3"], "mlp3_w_w3")}
    assert any(s == "removed" and n in layer3 for s, n in got) and any(s == "added" and n in layer3 for s, n in got)
    assert ("changed", "@mlp3_out0") in got  # the output buffer is 20 bytes now
    for status, name in got:
        assert name in layer3 or name.startswith("@mlp3_w_w3") or name in ("@mlp3_out0", "@mlp3_run"), (status, name)
    # the entry changed only where it calls layer 3 and copies its output
    run = got[("changed", "@mlp3_run")].diff.splitlines()
    edits = [ln for ln in run if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert edits and all(any(c in ln for c in layer3 | {"@mlp3_out0"}) for ln in edits), edits


def test_a_pruned_first_layer_changes_only_the_first_layer(builds):
    base, edited = builds["base"], builds["w1"]
    layer1 = {"@" + c for c in layer_clones(base, "mlp3_w_w1") | layer_clones(edited, "mlp3_w_w1")}
    got = changes(base, edited)
    assert ("removed", "@mlp3_w_w1") in got and ("added", "@mlp3_w_w1.csc.val") in got
    assert any(s == "removed" and n in layer1 for s, n in got) and any(s == "added" and n in layer1 for s, n in got)
    for status, name in got:
        assert name in layer1 or name.startswith("@mlp3_w_w1") or name in ("@mlp3_run", "metadata"), (status, name)
    # the entry changed only where it calls layer 1
    run = got[("changed", "@mlp3_run")].diff.splitlines()
    edits = [ln for ln in run if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert edits and all(any(c in ln for c in layer1) for ln in edits), edits


def test_other_layers_clones_keep_their_names(builds):
    for weight in ("mlp3_w_w2", "mlp3_w_w3"):
        names = {k: layer_clones(d, weight) for k, d in builds.items()}
        assert names["base"] and names["base"] == names["w1"] == names["w2"], (weight, names)
    for weight in ("mlp3_w_w1", "mlp3_w_w2"):  # and layers 1 and 2 when layer 3 grows
        assert layer_clones(builds["base"], weight) == layer_clones(builds["w3"], weight)
    got = changes(builds["base"], builds["w1"])
    later = layer_clones(builds["base"], "mlp3_w_w2") | layer_clones(builds["base"], "mlp3_w_w3")
    assert not {"@" + c for c in later} & {name for _, name in got}


def test_cli_prints_the_changes_and_exits_0(builds, tmp_path):
    r = subprocess.run([*SPECIALIZE, "diff-ir", builds["base"], builds["w2"]], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[2].startswith("1 changed, 0 added, 0 removed, ") and lines[3] == "changed global @mlp3_w_w2"
    assert "-@mlp3_w_w2 = internal unnamed_addr constant [256 x float] ...," in r.stdout
    # the same module on both sides: nothing listed; a .ll file works as well as a directory
    r = subprocess.run([*SPECIALIZE, "diff-ir", builds["base"] / "optimized.ll", builds["base"], "--stage", "optimized"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.splitlines()[2].startswith("0 changed, 0 added, 0 removed, ")
    assert len(r.stdout.splitlines()) == 3
    # the clones are labeled from specialization.json
    text = (builds["base"] / "optimized.diff.ll").read_text()
    assert "; specialized clone of @libjit_matmul_f32 for the constants:" in text


@pytest.mark.parametrize("case", ["missing", "empty_dir", "difftext", "syntax"])
def test_bad_input_is_one_line(tmp_path, case):
    good = tmp_path / "good.ll"
    good.write_text('target triple = "thumbv7em-unknown-none-eabihf"\ndefine void @f() {\n  ret void\n}\n')
    other = {"missing": tmp_path / "nope.ll", "empty_dir": tmp_path / "d", "difftext": tmp_path / "x.diff.ll",
             "syntax": tmp_path / "bad.ll"}[case]
    (tmp_path / "d").mkdir()
    (tmp_path / "x.diff.ll").write_text("; diff text\n")
    (tmp_path / "bad.ll").write_text("define void @f( {\n")
    want = {"missing": "nope.ll: no such file or directory", "empty_dir": "d: no optimized.ll in this directory",
            "difftext": "x.diff.ll: a diff-oriented text, which does not parse back; give the .ll it was made from (x.ll)",
            "syntax": "bad.ll:2:1: error: expected type"}[case]
    r = subprocess.run([*SPECIALIZE, "diff-ir", good, other], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("specialize: error: ") and want in lines[0], r.stderr


def test_unwritable_output_is_one_line(tmp_path):
    good = tmp_path / "good.ll"
    good.write_text('target triple = "thumbv7em-unknown-none-eabihf"\ndefine void @f() {\n  ret void\n}\n')
    r = subprocess.run([*SPECIALIZE, "diff-ir", good, good, "-o", tmp_path / "no" / "out.txt"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.splitlines() == [
        f"specialize: error: {tmp_path / 'no' / 'out.txt'}: cannot write: No such file or directory"]
