"""`specialize layers` (driver/layers.py, run/siteprofile.py, report/layer_table.py) on a small int8
.tflite model: every variant built with line-table debug info and profiled per call of the entry;
per layer, its est. cycles in each variant add up to the run's, and its MACs to report/macs.py's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_tflite_capture import small_int8

from specializer import inputs
from specializer.capture.capture import capture
from specializer.driver.layers import OTHER, layer_of, layer_profile
from specializer.optimize import variants
from specializer.report import layer_table, macs

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("layers")
    path = d / "small.tflite"
    path.write_bytes(small_int8(np.random.default_rng(11)))
    capture(path, None, d / "out")
    return d / "out" / "model.ll", layer_profile(d / "out" / "model.ll", d / "build")


def test_every_variant_adds_up_to_its_run(report):
    _, r = report
    assert [v.variant for v in r.variants] == list(variants.VARIANTS)
    for v in r.variants:
        assert v.row.status == "pass" and not v.why_not, v.why_not
        assert sum(v.cycles.values()) == v.row.cycles
        assert sum(v.insns.values()) == v.row.insns
        # the layers with code carry nearly all of it: the entry's own code is a few instructions
        assert v.cycles.get(OTHER, 0) < 0.01 * v.row.cycles
        assert all(v.cycles.get(k, 0) > 0 for k in (0, 1, 2, 4, 5)) and v.cycles.get(3, 0) == 0  # 3: RESHAPE


def test_the_conv_dominates_and_specializing_it_pays(report):
    _, r = report
    by = {v.variant: v.cycles for v in r.variants}
    assert max(by["lto"], key=by["lto"].get) == 0
    assert by["all-args"][0] < by["lto"][0] < by["separate"][0]


def test_macs_match_the_models_count(report):
    model_ll, r = report
    assert r.macs == macs.count(inputs.load(model_ll).text) == sum(x.macs for x in r.layers.layers) == 7806


def test_the_table(report):
    _, r = report
    text = layer_table.table(r)
    assert "| 0 | CONV_2D" in text and "(c/MAC and %: all-args, the fewest est. cycles)" in text
    assert "TFLite Micro's arena for the same file" in text
    assert max(len(line) for line in text.splitlines()) <= 100
    total = next(line for line in text.splitlines() if "| total" in line and "separate" not in line and "," in line
                 and line.count("|") > 8)
    assert f"{r.variants[1].row.cycles:,}" in total


def test_layer_of():
    scopes = {"layer0.CONV_2D": 0, "layer4.FULLY_CONNECTED": 4}
    assert layer_of("jit(m)/layer4.FULLY_CONNECTED/cmsis_nn.fully_connected_s8.ab/ffi_call", scopes) == 4
    assert layer_of("jit(m)/layer40.CONV_2D/add", scopes) is None


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specializer.cli", *map(str, args)], cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)


def test_a_bad_variant_is_one_line(report):
    model_ll, _ = report
    r = cli("layers", model_ll, "--variants", "lto,fast")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == ("specialize: error: --variants lto,fast: unknown variant 'fast' (have: separate, lto, "
                        "llvm-funcspec, dims, all-args)\n")


def test_a_model_without_layers_is_one_line(report, tmp_path):
    model_ll, _ = report
    for name in ("model.ll", "model.json", "hlo.json"):
        (tmp_path / name).write_bytes((model_ll.parent / name).read_bytes())
    r = cli("layers", tmp_path / "model.ll")
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "layers.json: no layers known for this model" in r.stderr
