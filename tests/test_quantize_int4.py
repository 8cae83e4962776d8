"""quantize(weight_bits=4): conv, depthwise and dense weights as int4, packed two a byte and run by
CMSIS-NN's s4 functions. A small network as a user writes one (a 3x3 stride-2 conv over 3
channels, depthwise convs with multipliers 2 and 1, a 1x1 conv, two dense layers, the last with
rows of odd length; between them every path of the shim's s4 functions, the 8-weight rows'
two-pixel conv over an odd 15 pixels): half the weights'
bytes, still close to the float model, the calls capture makes, and every variant on QEMU equal
to its JAX values."""

import json
import re

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, model_namespace

from specializer.quant.blocks import unpack_int4
from specializer.quant.graph import QuantizeError
from specializer.quant.ptq import quantize

MODEL = '''
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.quant.ptq import quantize

DN = ("NHWC", "HWIO", "NHWC")


def net(x, w1, b1, wd, w2, wd2, w3, b3, w4):
    y = jax.nn.relu(lax.conv_general_dilated(x, w1, (2, 2), "SAME", dimension_numbers=DN) + b1)      # 1x5x3x4
    y = lax.conv_general_dilated(y, wd, (1, 1), ((1, 1), (1, 1)), dimension_numbers=DN,
                                 feature_group_count=4)                                              # 1x5x3x8
    y = jax.nn.relu(lax.conv_general_dilated(y, w2, (1, 1), "VALID", dimension_numbers=DN))          # 1x5x3x8
    y = lax.conv_general_dilated(y, wd2, (1, 1), "SAME", dimension_numbers=DN, feature_group_count=8)  # 1x5x3x8
    y = jax.nn.relu(y.reshape(1, -1) @ w3 + b3)                                                      # 1x9
    return y @ w4                                                                                    # 1x3


rng = np.random.default_rng(5)
W = {"w1": rng.normal(size=(3, 3, 3, 4)) * 0.4, "b1": rng.normal(size=4) * 0.1,
     "wd": rng.normal(size=(3, 3, 1, 8)) * 0.4, "w2": rng.normal(size=(1, 1, 8, 8)) * 0.3,
     "wd2": rng.normal(size=(3, 3, 1, 8)) * 0.4,
     "w3": rng.normal(size=(120, 9)) * 0.1, "b3": rng.normal(size=9) * 0.1, "w4": rng.normal(size=(9, 3)) * 0.4}
W = {k: v.astype(np.float32) for k, v in W.items()}
calibration = [{"x": rng.standard_normal((1, 9, 5, 3)).astype(np.float32)} for _ in range(12)]
net_int4, params = quantize(net, W, calibration, name="net_int4", weight_bits=4)
net_int4.example_inputs = {"x": net_int4.inputs["x"].quantize(calibration[0]["x"])}
net_int4.weights = params
'''

SHAPES = {"w1": (4, 3, 3, 3), "wd": (1, 3, 3, 8), "w2": (8, 1, 1, 8), "wd2": (1, 3, 3, 8), "w3": (9, 120),
          "w4": (3, 9)}


def quantized() -> dict:
    return model_namespace(MODEL, "net_int4.py")


def test_weights_packed_in_int4_and_close_to_float():
    ns = quantized()
    model, qp = ns["net_int4"], ns["params"]
    assert [s.kind for s in model.steps] == ["conv", "depthwise", "conv", "depthwise", "reshape", "dense", "dense"]
    weighted = [s.block for s in model.steps if s.kind != "reshape"]
    assert all(b.weight_bits == 4 and b.op.endswith("_s4") for b in weighted)
    for name, shape in SHAPES.items():
        n = int(np.prod(shape))
        assert qp[name].dtype == np.int8 and qp[name].shape == ((n + 1) // 2,), name  # 27: odd
        w = np.asarray(unpack_int4(qp[name], shape))
        assert -7 <= w.min() and w.max() <= 7 and np.abs(w).max() == 7, name  # symmetric, scale = max / 7
    # against the float model with its weights on the int4 grid (what int4 can promise; the float
    # model itself is up to half its output range away on these random weights)
    grid = dict(ns["W"], **{k: _on_grid(ns["W"][k], k != "w3" and k != "w4") for k in SHAPES})
    xs = [sample["x"] for sample in ns["calibration"][:6]]  # inside the calibrated ranges
    refs = np.stack([np.asarray(ns["net"](x, **grid)) for x in xs])
    got = np.stack([model.run_float(qp, x=x) for x in xs])
    assert got.shape == refs.shape == (6, 1, 3)
    assert np.abs(got - refs).max() <= 0.15 * np.abs(refs).max()


def _on_grid(w, per_channel: bool):
    """w rounded to symmetric int4 steps (max |w| / 7, per output channel or per tensor)."""
    amax = np.abs(w).reshape(-1, w.shape[-1]).max(axis=0) if per_channel else np.abs(w).max()
    return (np.clip(np.round(w / (amax / 7)), -7, 7) * (amax / 7)).astype(np.float32)


def test_other_widths_are_refused_in_one_line():
    x = [{"x": np.ones((1, 4), np.float32)}]
    with pytest.raises(QuantizeError) as e:
        quantize(lambda x, w: x @ w, {"w": np.ones((4, 2), np.float32)}, x, weight_bits=2)
    assert "\n" not in str(e.value) and "weight_bits=2: 8 or 4" in str(e.value)


def test_in_every_variant_equal_to_jax(tmp_path):
    c = captured_source(MODEL, "net_int4", tmp_path)
    text = c.model_ll.read_text()
    calls = re.findall(r"call i32 @(arm_\w+)\(", text)
    assert sorted(set(calls)) == ["arm_convolve_s4", "arm_depthwise_conv_s4", "arm_fully_connected_s4"]
    assert [calls.count(f) for f in ("arm_convolve_s4", "arm_depthwise_conv_s4", "arm_fully_connected_s4")] == [2, 2, 2]
    every_variant_passes(c.model_ll, tmp_path, exact=True)
    # all-args: the depthwise calls and, within relayout's unpack4 (1: panels up to the packed bytes),
    # the convs and the small dense layer on the int8 kernels; the 120 -> 9 layer keeps its packed
    # weights and arm_fully_connected_s4
    relaid = json.loads((tmp_path / "cmp" / "all-args" / "relayout.json").read_text())
    kept = sorted((r["callee"], r["weight_bytes"][0]) for r in relaid if not r["kernel"] and "_s4" in r["callee"])
    laid = sorted(r["callee"] for r in relaid if r["kernel"] and "_s4" in r["callee"])
    assert kept == [("arm_fully_connected_s4", 0)] and "int4 weights kept packed" in str(relaid)
    assert laid == ["arm_convolve_s4"] * 2 + ["arm_depthwise_conv_s4"] * 2 + ["arm_fully_connected_s4"]
