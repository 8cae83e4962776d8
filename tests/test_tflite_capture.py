"""`specialize capture model.tflite`: the reader's function captured, with TFLite Micro's interpreter
as the oracle. model.json's reference outputs are TFLite Micro's (capture requires JAX's run to
equal them), so a variant's "pass" means QEMU computed what TFLite's own kernels compute, value
for value. Refusals (an op the reader does not take, a wrong --input, JAX differing from TFLite
Micro) are one line with nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_tflite_import import (ACT, MLPERF, OP, VALID, act8, const, conv_options, model_bytes, operator, out_scale,
                                rand8)
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

from specializer import inputs
from specializer.capture import imported
from specializer.capture.capture import capture
from specializer.driver.compare import compare
from specializer.errors import UserError
from specializer.optimize import variants

ROOT = Path(__file__).resolve().parent.parent
KWS = MLPERF / "kws_ref_model.tflite"


def small_int8(rng) -> bytes:
    """CONV_2D (ReLU) -> DEPTHWISE_CONV_2D (stride 2) -> AVERAGE_POOL_2D -> RESHAPE ->
    FULLY_CONNECTED, whose output is out0, -> SOFTMAX as out1: every block capture lowers onto
    CMSIS-NN, two outputs, the scales chosen so that on the example input only the ReLU clamps
    and the logits spread (a softmax alone may saturate)."""
    in_s, ws1, ws2 = 0.05, rng.uniform(0.5, 2.0, 6) / 127, rng.uniform(0.5, 2.0, 6) / 127
    x = act8((1, 8, 8, 2), in_s, 3, "x")
    s1 = out_scale(in_s, ws1.mean(), 18) / 16
    c1 = act8((1, 8, 8, 6), s1, -128, "c1")  # ReLU: zero at the bottom of the range
    s2 = out_scale(s1, ws2.mean(), 9) / 2
    c2 = act8((1, 4, 4, 6), s2, -5, "c2")
    p, r = act8((1, 1, 1, 6), s2, -5, "p"), act8((1, 6), s2, -5, "r")
    ws3 = 1.5 / 127
    y = act8((1, 5), out_scale(s2, ws3, 6) / 8, 2, "y")
    sm = act8((1, 5), 1 / 256, -128, "sm")
    w1 = const(rand8(rng, (6, 3, 3, 2), -127), ws1, 0, "w1")
    b1 = const(rng.integers(-800, 800, 6).astype(np.int32), in_s * ws1, 0, "b1")
    w2 = const(rand8(rng, (1, 3, 3, 6), -127), ws2, 3, "w2")
    b2 = const(rng.integers(-800, 800, 6).astype(np.int32), s1 * ws2, 3, "b2")
    w3 = const(rand8(rng, (5, 6), -127), ws3, None, "w3")
    b3 = const(rng.integers(-300, 300, 5).astype(np.int32), s2 * ws3, None, "b3")
    po = fb.Pool2DOptionsT()
    po.padding, po.strideH, po.strideW, po.filterHeight, po.filterWidth = VALID, 4, 4, 4, 4
    so = fb.SoftmaxOptionsT()
    so.beta = 1.0
    ops = [operator(OP.CONV_2D, [x, w1, b1], [c1], *conv_options(act=ACT.RELU)),
           operator(OP.DEPTHWISE_CONV_2D, [c1, w2, b2], [c2], *conv_options(stride=(2, 2), depth_multiplier=1)),
           operator(OP.AVERAGE_POOL_2D, [c2], [p], po, fb.BuiltinOptions.Pool2DOptions),
           operator(OP.RESHAPE, [p, const(np.array([1, 6], np.int32), name="shape")], [r]),
           operator(OP.FULLY_CONNECTED, [r, w3, b3], [y], fb.FullyConnectedOptionsT(),
                    fb.BuiltinOptions.FullyConnectedOptions),
           operator(OP.SOFTMAX, [y], [sm], so, fb.BuiltinOptions.SoftmaxOptions)]
    return model_bytes(ops, [x], [y, sm])


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "small.tflite"
    path.write_bytes(small_int8(np.random.default_rng(11)))
    return path


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specializer.cli", *map(str, args)], cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)


def tflm(path: Path, x: np.ndarray) -> list[np.ndarray]:
    return imported.run_tflite_micro(imported.read(path), [x])


def test_small_int8_model_bit_exact_with_tflite_micro_in_every_variant(small, tmp_path):
    c = capture(small, None, tmp_path / "cap")
    assert c.manifest.function == "small"
    assert sum(line.startswith("lowered ") for line in c.log) == 5  # conv, depthwise, pool, dense, softmax
    x = c.manifest.inputs[0].array()
    np.testing.assert_array_equal(x, imported.read(small).example_inputs[0])
    want = tflm(small, x)
    got = [t.array() for t in c.manifest.outputs]
    for g, w in zip(got, want):  # the reference is TFLite Micro's
        assert g.dtype == np.int8 and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    assert len(np.unique(got[0])) == got[0].size  # the logits spread: nothing hides in a clamp
    assert "tflite_micro" in c.manifest.versions
    comp = compare(inputs.load(c.model_ll), tmp_path / "cmp", variants.Options.of(unroll_candidates=()))
    assert [r.variant for r in comp.rows] == list(variants.VARIANTS)
    for r in comp.rows:  # pass: QEMU's outputs equal TFLite Micro's, value for value
        assert r.status == "pass", (r.variant, r)
        assert r.max_abs_err == 0, r.variant


def test_input_npy_is_the_example_input_and_the_oracle_runs_on_it(small, tmp_path):
    x = np.random.default_rng(5).integers(-128, 128, (1, 8, 8, 2)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    c = capture(small, None, tmp_path / "cap", example=tmp_path / "x.npy")
    np.testing.assert_array_equal(c.manifest.inputs[0].array(), x)
    for t, w in zip(c.manifest.outputs, tflm(small, x)):
        np.testing.assert_array_equal(t.array(), w)


def test_jax_differing_from_tflite_micro_is_refused_in_one_line(small, tmp_path, monkeypatch):
    real = imported.run_tflite_micro

    def off_by_one(model, xs):
        outs = real(model, xs)
        outs[0] = outs[0].copy()
        outs[0][0, 3] += 1
        return outs

    monkeypatch.setattr(imported, "run_tflite_micro", off_by_one)
    with pytest.raises(UserError) as e:
        capture(small, None, tmp_path / "cap")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("capture of small.tflite: JAX's output out0 differs from TFLite Micro's at 1 of 5 "
                          "values (largest at (0, 3):"), msg
    assert not (tmp_path / "cap").exists()


def test_float_outputs_within_1e4_relative():
    w = np.array([1.0, -2.0, 1000.0], np.float32)
    assert imported.difference("out0", w + np.float32(0.05), w) is None  # 5e-5 of the largest
    assert "out0 differs from TFLite Micro's at 3 of 3 values" in imported.difference("out0", w + 1, w)


def unsupported(path: Path) -> Path:
    x, h, y = act8((1, 8), 0.1, 0, "x"), act8((1, 8), 0.1, 0, "h"), act8((1, 8), 0.1, 0, "y")
    ops = [operator(OP.ADD, [x, x], [h], fb.AddOptionsT(), fb.BuiltinOptions.AddOptions),
           operator(OP.MUL, [h, h], [y], fb.MulOptionsT(), fb.BuiltinOptions.MulOptions)]
    path.write_bytes(model_bytes(ops, [x], [y]))
    return path


def test_an_unsupported_op_is_one_line_exit_2_nothing_written(tmp_path):
    model = unsupported(tmp_path / "mul.tflite")
    p = cli("capture", model, "-o", tmp_path / "out", cwd=tmp_path)
    assert p.returncode == 2, p
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "mul.tflite: operator 1 (MUL): not supported" in lines[0], p.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("array, why", [
    (np.zeros((1, 8, 8, 3), np.int8), "int8[1, 8, 8, 3], but small.tflite's input 'x' is int8[1, 8, 8, 2]"),
    (np.zeros((1, 8, 8, 2), np.float32), "float32[1, 8, 8, 2], but small.tflite's input 'x' is int8[1, 8, 8, 2]"),
], ids=["shape", "dtype"])
def test_a_wrong_input_is_one_line(array, why, small, tmp_path):
    np.save(tmp_path / "x.npy", array)
    p = cli("capture", small, "--input", tmp_path / "x.npy", "-o", tmp_path / "out", cwd=tmp_path)
    assert p.returncode == 2, p
    assert p.stderr.strip().splitlines() == [f"specialize: error: --input {tmp_path / 'x.npy'}: {why}"], p.stderr
    assert not (tmp_path / "out").exists()


def test_input_with_a_python_model_is_refused(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros(3, np.float32))
    with pytest.raises(UserError, match="--input .*: for a .tflite model"):
        capture(ROOT / "examples" / "mlp.py", "mlp", tmp_path / "out", example=tmp_path / "x.npy")


def mlperf(name: str) -> Path:
    path = MLPERF / name
    if not path.exists():
        pytest.skip(f"{path} is absent (the MLPerf Tiny models live in ../shared, beside the checkout)")
    return path


def capture_kws(tmp_path):
    """KWS captured: JAX's run equals TFLite Micro's (capture refuses it otherwise), every layer one
    CMSIS-NN call, the reference output TFLite Micro's and not saturated."""
    c = capture(mlperf(KWS.name), None, tmp_path / "cap")
    assert c.manifest.function == "kws_ref_model"
    assert sum(line.startswith("lowered ") for line in c.log) == 12
    out = c.manifest.outputs[0].array()
    np.testing.assert_array_equal(out, tflm(KWS, c.manifest.inputs[0].array())[0])
    assert out.shape == (1, 12) and len(np.unique(out)) > 3
    return c


def run_kws(c, tmp_path, which):
    comp = compare(inputs.load(c.model_ll), tmp_path / "cmp", variants.Options.of(unroll_candidates=()), which=which)
    assert [r.variant for r in comp.rows] == list(which)
    for r in comp.rows:  # bit-exact with TFLite Micro on QEMU
        assert r.status == "pass", (r.variant, r)
        assert r.max_abs_err == 0, r.variant
    return comp


def test_kws_captured_equal_to_tflite_micro(tmp_path):
    capture_kws(tmp_path)  # 8 s; on QEMU (about 30 s more in lto and all-args) only with --slow


@pytest.mark.slow
def test_kws_bit_exact_with_tflite_micro_in_lto_and_all_args(tmp_path):
    run_kws(capture_kws(tmp_path), tmp_path, ("lto", variants.ALL_ARGS))


@pytest.mark.slow
def test_kws_bit_exact_with_tflite_micro_in_every_variant(tmp_path):
    run_kws(capture_kws(tmp_path), tmp_path, variants.VARIANTS)
