"""layers.json: capture's record of a model's layers (specializer/capture/layers.py). A .tflite
model's operators run in the named scope `layer<op>.<OP>`, which reaches the op_name of every HLO
instruction they become; a quantize() model's blocks are its layers, each with its SNR against the
float model (specializer/quant/layererror.py)."""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_tflite_capture import small_int8

from specializer.capture import layers
from specializer.capture.capture import capture
from specializer.quant import layererror
from specializer.quant.ptq import quantize


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("small")
    path = d / "small.tflite"
    path.write_bytes(small_int8(np.random.default_rng(11)))
    capture(path, None, d / "out")
    return path, d / "out"


def test_a_tflite_models_operators_are_its_layers(small):
    path, out = small
    found = layers.load(out / layers.FILE_NAME)
    assert found.kind == "tflite" and found.source == str(path.resolve())
    assert [(x.index, x.op, x.name, x.scope) for x in found.layers] == [
        (0, "CONV_2D", "c1", "layer0.CONV_2D"), (1, "DEPTHWISE_CONV_2D", "c2", "layer1.DEPTHWISE_CONV_2D"),
        (2, "AVERAGE_POOL_2D", "p", "layer2.AVERAGE_POOL_2D"), (3, "RESHAPE", "r", "layer3.RESHAPE"),
        (4, "FULLY_CONNECTED", "y", "layer4.FULLY_CONNECTED"), (5, "SOFTMAX", "sm", "layer5.SOFTMAX")]
    conv, dw, pool, _, fc, sm = found.layers
    assert conv.inputs == (layers.Tensor((1, 8, 8, 2), "int8"),) and conv.outputs == (layers.Tensor((1, 8, 8, 6), "int8"),)
    # conv: 8x8x6 outputs x 3x3x2; depthwise: 4x4x6 x 3x3; dense: 5 x 6 inputs
    assert [x.macs for x in found.layers] == [384 * 18, 96 * 9, 0, 0, 30, 0]
    # int8 filter + int32 bias
    assert (conv.weight_bytes, dw.weight_bytes, fc.weight_bytes, pool.weight_bytes) == (108 + 24, 54 + 24, 30 + 20, 0)
    assert conv.activation_bytes == 128 + 384 and sm.activation_bytes == 10
    assert found.tflite_micro_arena and found.tflite_micro_arena > 0
    assert all(x.snr_db is None for x in found.layers)


def test_the_scope_reaches_every_cmsis_nn_call(small):
    _, out = small
    hlo = json.loads((out / "hlo.json").read_text())
    names = [hlo["ops"][h]["op_name"] for _, h in hlo["calls"]]
    assert [n.split("/")[1] for n in names] == ["layer0.CONV_2D", "layer1.DEPTHWISE_CONV_2D",
                                                 "layer2.AVERAGE_POOL_2D", "layer4.FULLY_CONNECTED", "layer5.SOFTMAX"]
    assert all("/cmsis_nn." in n for n in names)


def test_json_reads_back(small):
    _, out = small
    text = (out / layers.FILE_NAME).read_text()
    assert layers.loads(text).dumps() == text


def _float_model(x, w1, b1, w2, b2):
    y = jax.lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) + b1
    y = jnp.maximum(y, 0.0).reshape(1, -1)
    return y @ w2 + b2


def test_a_quantized_models_blocks_are_layers_with_their_snr():
    rng = np.random.default_rng(3)
    params = {"w1": rng.normal(size=(3, 3, 2, 4)).astype(np.float32) / 4, "b1": rng.normal(size=4).astype(np.float32) / 8,
              "w2": rng.normal(size=(64, 5)).astype(np.float32) / 8, "b2": np.zeros(5, np.float32)}
    cal = [{"x": rng.normal(size=(1, 4, 4, 2)).astype(np.float32)} for _ in range(8)]
    model, qparams = quantize(_float_model, params, cal)
    x8 = model.inputs["x"].quantize(cal[0]["x"])
    found = layers.of_quantized(model, {"x": x8}, qparams, "m.py:f")
    assert [(x.op, x.scope) for x in found.layers] == [("conv", "layer0.conv"), ("reshape", "layer1.reshape"),
                                                       ("dense", "layer2.dense")]
    assert [x.macs for x in found.layers] == [16 * 4 * 18, 0, 5 * 64]
    assert found.layers[0].weight_bytes == 72 + 16 and found.layers[2].weight_bytes == 320 + 20
    # int8 against float: tens of dB, not exact, and the reshape keeps its input's error
    snrs = [x.snr_db for x in found.layers]
    assert all(s is not None and 15 < s < 80 for s in snrs), snrs
    assert snrs[1] == snrs[0]


def test_snr():
    ref = np.array([3.0, 4.0])
    assert layererror.snr(ref, ref) == math.inf
    assert layererror.snr(np.zeros(2), ref) is None
    assert layererror.snr(ref, ref + np.array([0.3, 0.4])) == pytest.approx(20.0)
