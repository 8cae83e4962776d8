"""`specialize capture model.onnx`: the reader's function captured, onnx.reference as the oracle.

A float model's model.json outputs are onnx.reference's (JAX's must be within 1e-4 of them); a
QDQ model's are JAX's, CMSIS-NN's integer arithmetic, once every int8 layer is within one step of
onnx.reference's on its own inputs (the QDQ rule, tests/test_onnx_import.py measures it); every
variant then passes on QEMU. Refusals are one line with nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from onnx import helper
from every_variant import every_variant_passes
from onnx_models import float_cnn, model, qdq_cnn, qdq_gate, save, vi
from test_onnx_import import wheel_model

from specializer.capture import imported
from specializer.capture.capture import capture
from specializer.errors import UserError
from specializer.quant import blocks

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "specializer.cli", *map(str, args)], cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)


def test_qdq_int8_lowered_onto_cmsis_nn_and_exact_in_every_variant(tmp_path):
    path = save(qdq_cnn(np.random.default_rng(3)), tmp_path / "qdq.onnx")
    c = capture(path, None, tmp_path / "cap")
    lowered = [line for line in c.log if line.startswith("lowered ")]
    assert len(lowered) == 7, c.log  # conv, depthwise, max pool, add, avg pool, dense, softmax
    rule = [line for line in c.log if line.startswith("onnx.reference, layer by layer: ")]
    assert len(rule) == 8 and all("values differ by 1" in line for line in rule)  # 7 blocks + the input's Q
    assert c.manifest.versions["onnx"] and "QDQ rule" in c.manifest.versions["reference"]
    m = imported.read(path)
    with blocks.values_only():  # values only (blocks.py): compiled at once
        got = jax.jit(lambda *x: m(*x))(*m.example_inputs)
    for t, g in zip(c.manifest.outputs, got):  # model.json keeps JAX's (the integer arithmetic)
        np.testing.assert_array_equal(t.array(), np.asarray(g))
    every_variant_passes(c.model_ll, tmp_path, exact=True)  # dequantized int8 outputs: bit for bit on QEMU


def test_qdq_mul_lowered_onto_cmsis_nn_and_exact_in_every_variant(tmp_path):
    path = save(qdq_gate(np.random.default_rng(4)), tmp_path / "gate.onnx")
    c = capture(path, None, tmp_path / "cap")
    assert [line.split(" onto ")[1].split(" ")[0] for line in c.log if line.startswith("lowered ")] == \
        ["arm_convolve_s8", "arm_convolve_s8", "arm_elementwise_mul_s8"], c.log
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_float_cnn_reference_is_onnx_reference_and_input_npy(tmp_path):
    path = save(float_cnn(np.random.default_rng(1)), tmp_path / "cnn.onnx")
    x = np.random.default_rng(9).normal(size=(1, 2, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    c = capture(path, None, tmp_path / "cap", example=tmp_path / "x.npy")
    np.testing.assert_array_equal(c.manifest.inputs[0].array(), x)
    (want,) = imported.run_onnx_reference(imported.read(path), [(x,)])
    np.testing.assert_array_equal(c.manifest.outputs[0].array(), want[0])  # onnx.reference's, as they are
    assert "reference" not in c.manifest.versions


@pytest.mark.slow
def test_float_cnn_in_every_variant(tmp_path):
    path = save(float_cnn(np.random.default_rng(1)), tmp_path / "cnn.onnx")
    every_variant_passes(capture(path, None, tmp_path / "cap").model_ll, tmp_path, exact=False)


@pytest.mark.slow  # about 35 s on QEMU: the kernel runs in every variant in test_conv_transpose_f32
def test_conv_transpose_decoder_in_every_variant(tmp_path):
    """Conv (stride 2) + Relu -> ConvTranspose (stride 2, pads, output_padding) + Relu ->
    ConvTranspose (SAME_UPPER): an upsampling decoder, checked against onnx.reference on QEMU."""
    rng = np.random.default_rng(5)
    inits = {"w0": (rng.normal(size=(4, 2, 3, 3)) * 0.4).astype(np.float32),
             "w1": (rng.normal(size=(4, 5, 3, 3)) * 0.3).astype(np.float32),
             "b1": (rng.normal(size=5) * 0.1).astype(np.float32),
             "w2": (rng.normal(size=(5, 3, 4, 4)) * 0.3).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w0"], ["e"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["e"], ["r"]),
             helper.make_node("ConvTranspose", ["r", "w1", "b1"], ["d"], strides=[2, 2], pads=[1, 1, 1, 1],
                              output_padding=[1, 1]),
             helper.make_node("Relu", ["d"], ["rd"]),
             helper.make_node("ConvTranspose", ["rd", "w2"], ["y"], strides=[2, 2], auto_pad="SAME_UPPER")]
    path = save(model(nodes, [vi("x", [1, 2, 8, 8])], [vi("y", None)], inits), tmp_path / "decoder.onnx")
    c = capture(path, None, tmp_path / "cap")
    assert c.model_ll.read_text().count("call void @libjit_conv_transpose2d_f32(") == 2
    every_variant_passes(c.model_ll, tmp_path, exact=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["test_Conv2d", "test_Conv2d_depthwise", "test_Linear", "test_AvgPool2d"])
def test_wheel_pytorch_models_in_every_variant(name, tmp_path):
    d = wheel_model(name)
    path = tmp_path / f"{name}.onnx"
    path.write_bytes((d / "model.onnx").read_bytes())
    every_variant_passes(capture(path, None, tmp_path / "cap").model_ll, tmp_path, exact=False)


def test_jax_differing_from_onnx_reference_is_one_line(tmp_path, monkeypatch):
    path = save(float_cnn(np.random.default_rng(1)), tmp_path / "cnn.onnx")
    real = imported.run_onnx_reference

    def off(model, xss):
        outs = real(model, xss)
        outs[0][0] = outs[0][0] * np.float32(1.01)
        return outs

    monkeypatch.setattr(imported, "run_onnx_reference", off)
    with pytest.raises(UserError) as e:
        capture(path, None, tmp_path / "cap")
    assert str(e.value).startswith("capture of cnn.onnx: JAX's output out0 differs from onnx.reference's at ")
    assert not (tmp_path / "cap").exists()


def test_unsupported_op_and_damaged_file_are_one_line_exit_2_nothing_written(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Erf", ["r"], ["y"], name="e")]
    bad = save(model(nodes, [vi("x", [1, 4])], [vi("y", [1, 4])], {}), tmp_path / "erf.onnx")
    p = cli("capture", bad, "-o", tmp_path / "out", cwd=tmp_path)
    assert p.returncode == 2, p
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("specialize: error: erf.onnx: node 1 (Erf 'e'): not "
                                                   "supported"), p.stderr
    (tmp_path / "junk.onnx").write_bytes(b"\x08\x07garbage" * 10)
    p = cli("capture", tmp_path / "junk.onnx", "-o", tmp_path / "out", cwd=tmp_path)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "junk.onnx: " in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()


def test_float_activations_in_every_variant(tmp_path):
    """Conv -> LeakyRelu -> HardSwish -> Sigmoid and Tanh, HardSigmoid: a float model's activations
    on QEMU within tolerance of onnx.reference in every variant."""
    rng = np.random.default_rng(8)
    inits = {"w": (rng.normal(size=(4, 2, 3, 3)) * 0.5).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["c"], ["l"], alpha=0.2), helper.make_node("HardSwish", ["l"], ["h"]),
             helper.make_node("Sigmoid", ["h"], ["y0"]), helper.make_node("Tanh", ["h"], ["t"]),
             helper.make_node("HardSigmoid", ["t"], ["y1"])]
    path = save(model(nodes, [vi("x", [1, 2, 6, 5])], [vi("y0", None), vi("y1", None)], inits), tmp_path / "acts.onnx")
    every_variant_passes(capture(path, None, tmp_path / "cap").model_ll, tmp_path, exact=False)
