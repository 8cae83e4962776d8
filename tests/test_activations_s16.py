"""int16 LOGISTIC and TANH (16x8 files, and sigmoid / tanh under quantize(activation_bits=16)):
TFLite Micro's Prepare and its int16 kernels (specializer/quant/activations_s16.py) against TFLite
Micro on the host over power-of-two and other input scales; on QEMU in every variant, one of each
lowered onto the shim's arm_nn_activation_s16 (an input scale of 2^-12) and one left to XLA's code
(a multiplier that is not 3 x a power of two). And int16 LEAKY_RELU (XLA's code: CMSIS-NN has none)."""

from __future__ import annotations

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, int_values, model_namespace
from float_error import errors_16_and_8
from test_tflite_16x8 import act16, dense_layer
from test_tflite_import import OP, check, fb, model_bytes, operator

from specializer.capture import imported
from specializer.capture.capture import capture
from specializer.errors import UserError
from specializer.importers.tflite import read_tflite
from specializer.quant import activations_s16


def act_file(kind, shape, in_s, out_s=2.0 ** -15) -> bytes:
    x, y = act16(shape, in_s, "x"), act16(shape, out_s, "y")
    return model_bytes([operator(kind, [x], [y])], [x], [y])


def _write(tmp_path, data: bytes):
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    return path


# input scale -> arm_nn_activation_s16's left shift for it (None: XLA's code), per op. TFLite
# Micro takes 2^-12 (LOGISTIC; TANH also 2^-11) as a power of two, multiplier 3 << shift;
# other powers of two come out of its doubling loop as 24576 = 3 * 2^13, still CMSIS-NN's form
SCALES = {2.0 ** -12: 0, 2.0 ** -11: 1, 2.0 ** -13: -1, 2.0 ** -10: 2, 0.0003: None, 0.001: None,
          1e-5: None, 0.05: None}


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("kind", ["LOGISTIC", "TANH"])
def test_each_scale_equals_tflite_micro(kind, scale, tmp_path):
    data = act_file(getattr(OP, kind), (2, 7, 5), scale)
    p = read_tflite(_write(tmp_path, data)).layers[0].block
    assert p.op == f"{kind.lower()}_s16" and p.cmsis_left_shift == SCALES[scale]
    out = check(data, tmp_path, n=3)
    assert out.dtype == np.int16
    if scale < 0.01:  # a scale of 0.05 saturates almost every input
        assert len(np.unique(out)) >= 30, np.unique(out)
    if kind == "LOGISTIC":
        assert out.min() >= 0
    else:
        assert out.min() < 0 < out.max()


def test_power_of_two_decision_is_tflite_micros():
    """CheckedLog2 within 1e-3 of a power of two; TANH takes a shift of 1 as one, LOGISTIC not."""
    assert activations_s16.logistic_params((4,), 2.0 ** -12 * 1.0005, 0, 2.0 ** -15, 0).input_multiplier == 3
    assert activations_s16.logistic_params((4,), 2.0 ** -12 * 1.002, 0, 2.0 ** -15, 0).input_multiplier != 3
    assert activations_s16.logistic_params((4,), 2.0 ** -11, 0, 2.0 ** -15, 0).input_multiplier == 24576
    assert activations_s16.tanh_params((4,), 2.0 ** -11, 0, 2.0 ** -15, 0).input_multiplier == 6


def test_every_variant_on_qemu_equals_tflite_micro(tmp_path):
    """x at 2^-12 -> LOGISTIC and z at 2^-11 -> TANH, both lowered onto arm_nn_activation_s16
    (left shifts 0 and 1), and x -> dense -> TANH at the dense layer's scale (XLA's code): three
    outputs, in every variant against TFLite Micro."""
    rng = np.random.default_rng(8)
    x, z = act16((2, 24), 2.0 ** -12, "x"), act16((3, 5), 2.0 ** -11, "z")
    sig, tz = act16((2, 24), 2.0 ** -15, "sig"), act16((3, 5), 2.0 ** -15, "tz")
    d, y, y_s = dense_layer(rng, x, 2.0 ** -12, 24, batch=2)
    th = act16((2, 7), 2.0 ** -15, "th")
    ops = [operator(OP.LOGISTIC, [x], [sig]), operator(OP.TANH, [z], [tz]), d, operator(OP.TANH, [y], [th])]
    path = _write(tmp_path, model_bytes(ops, [x, z], [sig, tz, th]))
    c = capture(path, None, tmp_path / "cap", examples=2)
    assert [line.split(" onto ")[1] for line in c.log if line.startswith("lowered ")] == \
        ["arm_nn_activation_s16", "arm_nn_activation_s16", "arm_fully_connected_s16"]
    assert any("kept XLA's code for cmsis_nn.tanh_s16." in line and "not 3 x a power of two" in line
               for line in c.log), c.log
    ir = c.model_ll.read_text()
    assert "i32 0, i32 0)" in ir and "i32 1, i32 1)" in ir  # (left_shift, type): sigmoid 0, tanh 1
    xs = tuple(i.array() for i in c.manifest.inputs)
    want = imported.run_tflite_micro(imported.read(path), [xs])[0]
    for k, w in enumerate(want):
        got = c.manifest.outputs[k].array()
        np.testing.assert_array_equal(got, w)
        assert got.dtype == np.int16 and len(np.unique(got)) >= 7
    every_variant_passes(c.model_ll, tmp_path, exact=True)


MODEL = '''
import jax
import jax.numpy as jnp
import numpy as np

from specializer.quant.ptq import quantize


def gates(x, w1, b1, w2, b2):
    h = jnp.tanh(x @ w1 + b1)
    return jax.nn.sigmoid(h @ w2 + b2)


rng = np.random.default_rng(9)
W = {"w1": rng.normal(size=(12, 10)) * 0.5, "b1": rng.normal(size=10) * 0.1,
     "w2": rng.normal(size=(10, 4)) * 0.5, "b2": rng.normal(size=4) * 0.1}
W = {k: v.astype(np.float32) for k, v in W.items()}
calibration = [{"x": rng.standard_normal((2, 12)).astype(np.float32)} for _ in range(10)]
gates_16x8, params = quantize(gates, W, calibration, name="gates_16x8", activation_bits=16)
gates_16x8.example_inputs = {"x": gates_16x8.inputs["x"].quantize(calibration[0]["x"])}
gates_16x8.weights = params
'''


def test_quantize_16x8_tanh_and_sigmoid(tmp_path):
    ns = model_namespace(MODEL, "gates_16x8.py")
    model, qp = ns["gates_16x8"], ns["params"]
    assert [s.block.op for s in model.steps] == ["fully_connected_s16", "tanh_s16", "fully_connected_s16",
                                                 "logistic_s16"]
    assert [model.step_qparams[k].scale for k in (1, 3)] == [2.0 ** -15] * 2
    out = np.asarray(int_values(model, **model.example_inputs, **qp)[-1])
    assert out.dtype == np.int16 and out.shape == (2, 4) and out.min() > 0
    # against the float model with its weights on the int8 grid: a small part of int8's error
    err16, err8 = errors_16_and_8(ns["gates"], ns["W"], ns["calibration"], model, qp, ("w1", "w2"))
    assert err16 < err8 / 50, (err16, err8)  # measured 6.4e-5 against 7.9e-3
    c = captured_source(MODEL, "gates_16x8", tmp_path)
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_refusals_are_one_line(tmp_path):
    for data, want in ((act_file(OP.LOGISTIC, (1, 6), 2.0 ** -12, out_s=2.0 ** -8), "2^-15"),
                       (act_file(OP.TANH, (1, 6), 40.0), "above what TFLite Micro's kernel takes")):
        with pytest.raises(UserError) as e:
            read_tflite(_write(tmp_path, data))
        assert "\n" not in str(e.value) and want in str(e.value), str(e.value)


# (input scale, output scale, alpha): alpha small, negative, above 1
LEAKY = {"plain": (0.001, 0.001, 0.1), "rescaled": (0.001, 0.0007, 0.2), "negative_alpha": (0.002, 0.003, -0.3),
         "saturating": (0.001, 0.0005, 0.05), "alpha_above_one": (0.001, 0.001, 1.5)}


@pytest.mark.parametrize("case", LEAKY)
def test_leaky_relu_equals_tflite_micro(case, tmp_path):
    in_s, out_s, alpha = LEAKY[case]
    o = fb.LeakyReluOptionsT()
    o.alpha = alpha
    x, y = act16((2, 5, 7), in_s, "x"), act16((2, 5, 7), out_s, "y")
    data = model_bytes([operator(OP.LEAKY_RELU, [x], [y], o, fb.BuiltinOptions.LeakyReluOptions)], [x], [y])
    assert read_tflite(_write(tmp_path, data)).layers[0].block.op == "leaky_relu_s16"
    out = check(data, tmp_path, n=3)
    assert out.dtype == np.int16 and len(np.unique(out)) >= 100


LEAKY_MODEL = '''
import jax
import numpy as np

from specializer.quant.ptq import quantize


def leaky(x, w, b):
    return jax.nn.leaky_relu(x @ w + b, 0.15)


rng = np.random.default_rng(13)
W = {"w": (rng.normal(size=(16, 8)) * 0.5).astype(np.float32), "b": (rng.normal(size=8) * 0.1).astype(np.float32)}
calibration = [{"x": rng.standard_normal((2, 16)).astype(np.float32)} for _ in range(8)]
leaky_16x8, params = quantize(leaky, W, calibration, name="leaky_16x8", activation_bits=16)
leaky_16x8.example_inputs = {"x": leaky_16x8.inputs["x"].quantize(calibration[0]["x"])}
leaky_16x8.weights = params
'''


def test_quantize_16x8_leaky_relu_in_every_variant(tmp_path):
    ns = model_namespace(LEAKY_MODEL, "leaky_16x8.py")
    model, qp = ns["leaky_16x8"], ns["params"]
    assert [s.block.op for s in model.steps] == ["fully_connected_s16", "leaky_relu_s16"]
    # inside the calibrated range (at its edge the gridded weights reach past it: both saturate)
    err16, err8 = errors_16_and_8(ns["leaky"], ns["W"], ns["calibration"], model, qp, ("w",), scale=0.8)
    assert err16 < err8 / 50, (err16, err8)
    c = captured_source(LEAKY_MODEL, "leaky_16x8", tmp_path)
    assert any("kept XLA's code for cmsis_nn.leaky_relu_s16." in line for line in c.log), c.log
    every_variant_passes(c.model_ll, tmp_path, exact=True)
