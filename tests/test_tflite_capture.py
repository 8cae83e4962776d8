"""`specialize capture model.tflite`: the reader's function captured, with TFLite Micro's interpreter
as the oracle. model.json's reference outputs are TFLite Micro's (capture requires JAX's run to
equal them), so a variant's "pass" means QEMU computed what TFLite's own kernels compute, value
for value. Refusals (an op the reader does not take, a wrong --input, JAX differing from TFLite
Micro) are one line with nothing written."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_tflite_import import (ACT, MLPERF, OP, SAME, VALID, Tflm, act8, actf, const, conv_options, model_bytes,
                                operator, out_scale, rand8)
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

from specializer import inputs
from specializer.capture import imported
from specializer.capture.capture import capture
from specializer.capture.manifest import Manifest
from specializer.driver.compare import compare
from specializer.errors import UserError
from specializer.optimize import variants
from specializer.report import macs

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
    b2 = const(rng.integers(-800, 800, 6).astype(np.int32), s1 * ws2, 0, "b2")  # a bias is 1-D: axis 0
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
    (outs,) = imported.run_tflite_micro(imported.read(path), [(x,)])
    return outs


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


def test_every_layer_on_four_inputs_bit_exact(small, tmp_path):
    """--every-layer --examples 4: each operator's output is a model output, checked against the
    tensor TFLite Micro keeps for it (kPreserveAllTensors, another way in than the rewritten copy
    the oracle reads) on four inputs; QEMU runs each input. A vector's reference moved by one
    makes the run fail: the extra inputs really are checked."""
    c = capture(small, None, tmp_path / "cap", examples=4, every_layer=True)
    model = imported.read(small)
    assert [t.name for t in c.manifest.outputs] == [f"out{i}" for i in range(len(model.layers))]
    assert len(c.manifest.vectors) == 3
    tf = Tflm(small.read_bytes())
    for k, xs in enumerate(model.examples(4)):
        m = c.manifest if k == 0 else c.manifest.at(k - 1)
        np.testing.assert_array_equal(m.inputs[0].array(), xs[0])
        _, kept = tf.run(xs, 2, [layer.output for layer in model.layers])
        for t, layer in zip(m.outputs, model.layers):
            np.testing.assert_array_equal(t.array(), kept[layer.output], err_msg=f"input {k}, {layer.op}")
    # the least and the most transformed builds (every variant: the model alone, above; every
    # layer of the MLPerf Tiny models in every variant: with --slow)
    which = ("separate", variants.ALL_ARGS)
    comp = compare(inputs.load(c.model_ll), tmp_path / "cmp", variants.Options.of(unroll_candidates=()), which=which)
    assert [r.variant for r in comp.rows] == list(which) and comp.checked_inputs == 4
    for r in comp.rows:
        assert r.status == "pass" and r.max_abs_err == 0, (r.variant, r)

    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "model.ll").write_text(c.model_ll.read_text())
    v = c.manifest.vectors[1]
    conv = list(v.outputs[0])
    conv[5] += 1 if conv[5] < 127 else -1
    conv = (tuple(conv),)
    moved = dataclasses.replace(c.manifest, vectors=(c.manifest.vectors[0],
                                                     dataclasses.replace(v, outputs=conv + v.outputs[1:]),
                                                     c.manifest.vectors[2]))
    (wrong / "model.json").write_text(moved.dumps())
    (row,) = compare(inputs.load(wrong / "model.ll"), tmp_path / "cmp2", variants.Options.of(unroll_candidates=()),
                     which=("lto",)).rows
    assert row.status == "FAIL" and row.max_abs_err == 1, row


def test_a_model_tflite_micro_cannot_run_is_one_line(small, tmp_path, capfd):
    """The interpreter's own complaint (printed by its C++) becomes the reason, in one line."""
    broken = fb.ModelT.InitFromObj(fb.Model.GetRootAs(small.read_bytes(), 0))
    broken.subgraphs[0].operators[0].opcodeIndex = broken.subgraphs[0].operators[-1].opcodeIndex  # a SOFTMAX
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(model_bytes_of(broken))
    model = dataclasses.replace(imported.read(small), path=bad)
    capfd.readouterr()
    with pytest.raises(UserError) as e:
        imported.run_tflite_micro(model, [model.example_inputs])
    assert "\n" not in str(e.value)
    assert str(e.value).startswith("bad.tflite: TFLite Micro's interpreter cannot run it ("), str(e.value)
    assert "SOFTMAX" in str(e.value) or "softmax" in str(e.value), str(e.value)
    out, err = capfd.readouterr()
    assert out == err == ""  # nothing of the interpreter's own printing escapes


def model_bytes_of(model) -> bytes:
    import flatbuffers

    b = flatbuffers.Builder(1024)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def test_an_input_stack_gives_the_measured_input_and_the_vectors(small, tmp_path):
    xs = np.random.default_rng(6).integers(-128, 128, (3, 1, 8, 8, 2)).astype(np.int8)
    np.save(tmp_path / "x.npy", xs)
    c = capture(small, None, tmp_path / "cap", example=tmp_path / "x.npy")
    np.testing.assert_array_equal(c.manifest.inputs[0].array(), xs[0])
    assert len(c.manifest.vectors) == 2
    for k in (1, 2):
        m = c.manifest.at(k - 1)
        np.testing.assert_array_equal(m.inputs[0].array(), xs[k])
        for t, w in zip(m.outputs, tflm(small, xs[k])):
            np.testing.assert_array_equal(t.array(), w)
    again = Manifest.load(c.manifest_json)
    assert again == c.manifest  # the vectors read back as written


def test_jax_differing_from_tflite_micro_is_refused_in_one_line(small, tmp_path, monkeypatch):
    real = imported.run_tflite_micro

    def off_by_one(model, xss):
        outs = real(model, xss)
        outs[0][0][0, 3] += 1
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
           operator(OP.DIV, [h, h], [y], fb.DivOptionsT(), fb.BuiltinOptions.DivOptions)]
    path.write_bytes(model_bytes(ops, [x], [y]))
    return path


def test_an_unsupported_op_is_one_line_exit_2_nothing_written(tmp_path):
    model = unsupported(tmp_path / "div.tflite")
    p = cli("capture", model, "-o", tmp_path / "out", cwd=tmp_path)
    assert p.returncode == 2, p
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "div.tflite: operator 1 (DIV): not supported" in lines[0], p.stderr
    assert not (tmp_path / "out").exists()


def float_decoder(rng) -> bytes:
    """CONV_2D (stride 2, ReLU) -> TRANSPOSE_CONV (stride 2, SAME, ReLU) -> TRANSPOSE_CONV (VALID, a
    4x4 filter, 5 -> 3 channels, no bias): an upsampling decoder as a converter writes one."""
    x = actf((1, 8, 8, 2), "x")
    e = actf((1, 4, 4, 6), "e")
    d1 = actf((1, 8, 8, 5), "d1")
    y = actf((1, 18, 18, 3), "y")
    w0 = const((rng.normal(size=(6, 3, 3, 2)) * 0.4).astype(np.float32), name="w0")
    b0 = const((rng.normal(size=6) * 0.1).astype(np.float32), name="b0")
    w1 = const((rng.normal(size=(5, 3, 3, 6)) * 0.3).astype(np.float32), name="w1")
    b1 = const((rng.normal(size=5) * 0.1).astype(np.float32), name="b1")
    w2 = const((rng.normal(size=(3, 4, 4, 5)) * 0.3).astype(np.float32), name="w2")
    ops = [operator(OP.CONV_2D, [x, w0, b0], [e], *conv_options(stride=(2, 2), act=ACT.RELU))]
    for inp, w, b, out, padding, act in ((e, w1, b1, d1, SAME, ACT.RELU), (d1, w2, None, y, VALID, ACT.NONE)):
        o = fb.TransposeConvOptionsT()
        o.padding, o.strideH, o.strideW, o.fusedActivationFunction = padding, 2, 2, act
        shape = const(np.array(out.shape, np.int32), name=f"{out.name}_shape")
        ops.append(operator(OP.TRANSPOSE_CONV, [shape, w, inp] + ([b] if b else []), [out], o,
                            fb.BuiltinOptions.TransposeConvOptions))
    return model_bytes(ops, [x], [y])


@pytest.mark.slow  # about 35 s on QEMU: the kernel runs in every variant in test_conv_transpose_f32
def test_float_transposed_convolutions_in_every_variant(tmp_path):
    path = tmp_path / "decoder.tflite"
    path.write_bytes(float_decoder(np.random.default_rng(12)))
    c = capture(path, None, tmp_path / "cap")
    x = c.manifest.inputs[0].array()
    (want,) = tflm(path, x)
    np.testing.assert_array_equal(c.manifest.outputs[0].array(), want)  # TFLite Micro's, as they are
    assert c.model_ll.read_text().count("call void @libjit_conv_transpose2d_f32(") == 2
    comp = compare(inputs.load(c.model_ll), tmp_path / "cmp", variants.Options.of(unroll_candidates=()))
    assert [r.variant for r in comp.rows] == list(variants.VARIANTS)
    for r in comp.rows:
        assert r.status == "pass", (r.variant, r)


def int8_decoder(rng) -> bytes:
    """CONV_2D (stride 2, ReLU) -> TRANSPOSE_CONV (stride 2, SAME, 6 -> 5 channels) ->
    TRANSPOSE_CONV (VALID, 4x4, 5 -> 3, no bias), int8 per-channel, scales spreading each output."""
    in_s = 0.05
    ws0, ws1, ws2 = (rng.uniform(0.5, 2.0, n) / 127 for n in (6, 5, 3))
    s0 = out_scale(in_s, ws0.mean(), 18) / 4
    s1 = out_scale(s0, ws1.mean(), 14) / 3
    s2 = out_scale(s1, ws2.mean(), 20) / 6
    x, e = act8((1, 8, 8, 2), in_s, 3, "x"), act8((1, 4, 4, 6), s0, -128, "e")
    d, y = act8((1, 8, 8, 5), s1, -4, "d"), act8((1, 18, 18, 3), s2, 6, "y")
    w0 = const(rand8(rng, (6, 3, 3, 2), -127), ws0, 0, "w0")
    b0 = const(rng.integers(-800, 800, 6).astype(np.int32), in_s * ws0, 0, "b0")
    w1 = const(rand8(rng, (5, 3, 3, 6), -127), ws1, 0, "w1")
    b1 = const(rng.integers(-800, 800, 5).astype(np.int32), s0 * ws1, 0, "b1")
    w2 = const(rand8(rng, (3, 4, 4, 5), -127), ws2, 0, "w2")
    ops = [operator(OP.CONV_2D, [x, w0, b0], [e], *conv_options(stride=(2, 2), act=ACT.RELU))]
    for inp, w, b, out, padding in ((e, w1, b1, d, SAME), (d, w2, None, y, VALID)):
        o = fb.TransposeConvOptionsT()
        o.padding, o.strideH, o.strideW = padding, 2, 2
        shape = const(np.array(out.shape, np.int32), name=f"{out.name}_shape")
        ops.append(operator(OP.TRANSPOSE_CONV, [shape, w, inp] + ([b] if b else []), [out], o,
                            fb.BuiltinOptions.TransposeConvOptions))
    return model_bytes(ops, [x], [y])


def test_int8_transposed_convolutions_bit_exact_with_tflite_micro_in_every_variant(tmp_path):
    path = tmp_path / "decoder8.tflite"
    path.write_bytes(int8_decoder(np.random.default_rng(13)))
    c = capture(path, None, tmp_path / "cap")
    assert sum("onto arm_transpose_conv_s8" in line for line in c.log) == 2
    # MACs: the conv 4*4*6 outputs x 3*3*2 taps; TRANSPOSE_CONV SAME (padding 0): 11 of the 4x3
    # (input row, filter row) pairs land in the 8 output rows, likewise columns, x 6 x 5; VALID:
    # every product lands, 8*8 x 4*4 x 5 x 3
    assert macs.count(c.model_ll.read_text()) == 4 * 4 * 6 * 9 * 2 + 11 * 11 * 6 * 5 + 8 * 8 * 16 * 5 * 3
    x = c.manifest.inputs[0].array()
    (want,) = tflm(path, x)
    got = c.manifest.outputs[0].array()
    np.testing.assert_array_equal(got, want)  # TFLite Micro's
    assert len(np.unique(got)) > 50
    comp = compare(inputs.load(c.model_ll), tmp_path / "cmp", variants.Options.of(unroll_candidates=()))
    assert [r.variant for r in comp.rows] == list(variants.VARIANTS)
    for r in comp.rows:  # QEMU's outputs equal TFLite Micro's, value for value
        assert r.status == "pass", (r.variant, r)
        assert r.max_abs_err == 0, r.variant


@pytest.mark.parametrize("array, why", [
    (np.zeros((1, 8, 8, 3), np.int8), "int8[1, 8, 8, 3]"),
    (np.zeros((1, 8, 8, 2), np.float32), "float32[1, 8, 8, 2]"),
    (np.zeros((3, 1, 8, 8, 3), np.int8), "int8[3, 1, 8, 8, 3]"),
    (np.zeros((0, 1, 8, 8, 2), np.int8), "int8[0, 1, 8, 8, 2]"),
], ids=["shape", "dtype", "stack-shape", "empty-stack"])
def test_a_wrong_input_is_one_line(array, why, small, tmp_path):
    np.save(tmp_path / "x.npy", array)
    p = cli("capture", small, "--input", tmp_path / "x.npy", "-o", tmp_path / "out", cwd=tmp_path)
    assert p.returncode == 2, p
    why += ", but small.tflite's input 'x' is int8[1, 8, 8, 2] (or a stack of them, int8[N, 1, 8, 8, 2])"
    assert p.stderr.strip().splitlines() == [f"specialize: error: --input {tmp_path / 'x.npy'}: {why}"], p.stderr
    assert not (tmp_path / "out").exists()


def test_input_with_a_python_model_is_refused(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros(3, np.float32))
    with pytest.raises(UserError, match="--input .*: for a .tflite or .onnx model"):
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


def test_kws_captured_equal_to_tflite_micro(tmp_path):
    capture_kws(tmp_path)  # 8 s; on QEMU only with --slow


# file -> (operators, examples whose final output has values off the clamps, at least)
MLPERF_INT8 = {"kws_ref_model.tflite": (13, 10), "pretrainedResnet_quant.tflite": (16, 10),
               "vww_96_int8.tflite": (31, 10), "ad01_int8.tflite": (10, 20)}
MLPERF_FLOAT = {"pretrainedResnet.tflite": 16, "vww_96_float.tflite": 31, "ad01_fp32.tflite": 10}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MLPERF_INT8) + list(MLPERF_FLOAT))
def test_mlperf_tiny_every_layer_on_20_inputs_in_every_variant(name, tmp_path):
    """Each MLPerf Tiny model with every operator's output a model output, on 20 inputs: every
    variant runs each input on QEMU and every layer equals TFLite Micro's (int8 bit for bit, float
    within the manifest's tolerance). Minutes each (VWW about 20)."""
    c = capture(mlperf(name), None, tmp_path / "cap", examples=20, every_layer=True)
    m = c.manifest
    n_ops = MLPERF_INT8[name][0] if name in MLPERF_INT8 else MLPERF_FLOAT[name]
    assert len(m.outputs) == n_ops and m.checked_inputs == 20 and m.reference == "TFLite Micro"
    if name in MLPERF_INT8:  # the inputs reach past a saturated softmax
        finals = [m.outputs[-1].array()] + [m.at(k).outputs[-1].array() for k in range(19)]
        inside = [int(np.sum((f > -128) & (f < 127))) for f in finals]
        assert sum(n >= 2 for n in inside) >= MLPERF_INT8[name][1], inside
    else:
        assert m.rtol <= imported.FLOAT_RTOL
    comp = compare(inputs.load(c.model_ll), tmp_path / "cmp", variants.Options.of(unroll_candidates=()),
                   which=variants.VARIANTS)
    assert [r.variant for r in comp.rows] == list(variants.VARIANTS)
    assert comp.checked_inputs == 20 and comp.reference == "TFLite Micro"
    for r in comp.rows:
        assert r.status == "pass", (r.variant, r)
        if name in MLPERF_INT8:
            assert r.max_abs_err == 0, r.variant
