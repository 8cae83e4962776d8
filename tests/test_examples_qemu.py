"""End to end: each bundled model captured, built for Cortex-M4, run on QEMU, checked against JAX."""

import numpy as np
import pytest

from specializer.driver.examples import EXAMPLES
from specializer.driver.run import run_model
from specializer.run.measure import read_outputs


# int8 networks whose capture (JAX's integer reference compiles slowly) and run take minutes (the
# anomaly autoencoder's 40 s); the ops they add are each tested on QEMU in
# tests/test_cmsis_lowering.py, its dense layers in every variant by the MLPerf AD model's test
SLOW = ("resnet8_int8", "mobilenet_vww_int8", "anomaly_ae_int8")


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in EXAMPLES])
def test_model_matches_jax(name, captured, tmp_path):
    c = captured(name)
    row, result = run_model(c.model_ll, tmp_path)
    # the program QEMU ran produced JAX's outputs within rtol 1e-5 (harness and Python agree)
    assert result.exit_code == 0, result.stdout
    assert row.status == "pass"
    assert row.max_rel_err <= 1e-5
    for got, t in zip(read_outputs(result.stdout, c.manifest), c.manifest.outputs):
        np.testing.assert_allclose(got, t.array(), rtol=1e-5, atol=1e-6)
    assert row.insns > 0 and row.cycles >= row.insns
    assert row.text > 0


@pytest.mark.parametrize("name", ["quadratic", "mlp", "while_loop"])
def test_plugin_and_icount_counter_agree(name, captured, tmp_path):
    c = captured(name)
    plugin, _ = run_model(c.model_ll, tmp_path / "plugin", method="plugin")
    counter, _ = run_model(c.model_ll, tmp_path / "icount", method="icount")
    assert plugin.insns == counter.insns
    # the counter gives no profile to weigh: no cycle figure rather than a made-up 0
    assert counter.cycles is None and plugin.cycles >= plugin.insns


def test_run_icount_prints_na_cycles(captured, capsys):
    from specializer import cli

    assert cli.main(["run", str(captured("quadratic").model_ll), "--method", "icount"]) == 0
    out = capsys.readouterr().out
    header, _, row = out.splitlines()[:3]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert header.split("|")[-2].strip() == "est. cycles" and cells[-1] == "n/a"
    assert int(cells[-2]) > 0  # the instructions are counted


def test_runs_are_deterministic(captured, tmp_path):
    c = captured("softmax")
    a, ra = run_model(c.model_ll, tmp_path / "a")
    b, rb = run_model(c.model_ll, tmp_path / "b")
    assert a == b
    assert ra.profile == rb.profile
    assert (tmp_path / "a" / "model.o").read_bytes() == (tmp_path / "b" / "model.o").read_bytes()


def test_capture_is_byte_identical(captured, tmp_path):
    from specializer.capture.capture import capture
    from specializer.driver.examples import example_path

    first = captured("mlp")
    again = capture(example_path("mlp"), "mlp", tmp_path)
    assert first.model_ll.read_bytes() == again.model_ll.read_bytes()
    assert first.manifest_json.read_bytes() == again.manifest_json.read_bytes()


def test_weights_are_constant_globals_and_control_flow_is_lowered(captured):
    mlp = captured("mlp").model_ll.read_text()
    assert '@mlp_w_w1 = constant [512 x float]' in mlp
    assert "@mlp_in_x = global [64 x i8] zeroinitializer" in mlp
    loop = captured("while_loop").model_ll.read_text()
    assert "while.cond" in loop and "while.body" in loop
    cond = captured("cond").model_ll.read_text()
    assert "branch" in cond and "cond.done" in cond
