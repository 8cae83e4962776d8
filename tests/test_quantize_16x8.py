"""quantize(activation_bits=16): TFLite's 16x8 scheme -- int16 activations (symmetric), int8 weights,
int64 biases -- run by CMSIS-NN's s16 functions. A small network as a user writes one (a 3x3
stride-2 conv over 3 channels into 6, a depthwise conv with multiplier 2 and padding, a max pool,
a 1x1 conv added back, relu, times the 1x1 conv, a global average pool, a dense layer into 5): every layer an s16
block, closer to the float model than the int8 scheme, the calls capture makes, and every
variant on QEMU equal to its JAX values."""

import re

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, int_values, model_namespace
from float_error import on_grid

from specializer.quant import fixedpoint
from specializer.quant.graph import QuantizeError
from specializer.quant.ptq import quantize

MODEL = '''
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.quant.ptq import quantize

DN = ("NHWC", "HWIO", "NHWC")


def net(x, w1, b1, wd, bd, w2, w3, b3):
    y = jax.nn.relu(lax.conv_general_dilated(x, w1, (2, 2), "SAME", dimension_numbers=DN) + b1)      # 1x5x4x6
    z = lax.conv_general_dilated(y, wd, (1, 1), ((1, 1), (1, 1)), dimension_numbers=DN,
                                 feature_group_count=6) + bd                                         # 1x5x4x12
    z = lax.reduce_window(z, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 1, 1, 1), "VALID")                 # 1x4x3x12
    u = lax.conv_general_dilated(z, w2, (1, 1), "VALID", dimension_numbers=DN)                       # 1x4x3x12
    z = jax.nn.relu(z + u) * u
    g = jnp.mean(z, axis=(1, 2))                                                                     # 1x12
    return g @ w3 + b3                                                                               # 1x5


rng = np.random.default_rng(7)
W = {"w1": rng.normal(size=(3, 3, 3, 6)) * 0.4, "b1": rng.normal(size=6) * 0.1,
     "wd": rng.normal(size=(3, 3, 1, 12)) * 0.4, "bd": rng.normal(size=12) * 0.1,
     "w2": rng.normal(size=(1, 1, 12, 12)) * 0.3,
     "w3": rng.normal(size=(12, 5)) * 0.4, "b3": rng.normal(size=5) * 0.1}
W = {k: v.astype(np.float32) for k, v in W.items()}
calibration = [{"x": rng.standard_normal((1, 9, 7, 3)).astype(np.float32)} for _ in range(12)]
BITS = 16
net_16x8, params = quantize(net, W, calibration, name="net_16x8", activation_bits=BITS)
net_16x8.example_inputs = {"x": net_16x8.inputs["x"].quantize(calibration[0]["x"])}
net_16x8.weights = params
'''

OPS = ["convolve_s16", "depthwise_conv_s16", "max_pool_s16", "convolve_s16", "elementwise_add_s16",
       "elementwise_mul_s16", "avgpool_s16", "fully_connected_s16"]


def test_every_layer_an_s16_block_closer_to_float_than_int8():
    ns = model_namespace(MODEL, "net_16x8.py")
    model, qp = ns["net_16x8"], ns["params"]
    assert [s.block.op for s in model.steps] == OPS
    assert all(s.block.activation_bits == 16 for s in model.steps)
    assert model.inputs["x"].zero_point == 0 and model.inputs["x"].bits == 16
    xq = np.stack([model.inputs["x"].quantize(c["x"]) for c in ns["calibration"]])
    assert xq.dtype == np.int16 and np.abs(xq).max() == 32767  # calibrated on these: the range's edge
    out = np.asarray(int_values(model, **model.example_inputs, **qp)[-1])
    assert out.dtype == np.int16 and out.shape == (1, 5)
    # biases: int64 at input x weight scale, carried as int32 words (low first)
    for name in ("b1", "bd", "b3"):
        assert qp[name].dtype == np.int32 and qp[name].ndim == 2 and qp[name].shape[1] == 2
    b3 = qp["b3"].view(np.int64).reshape(-1)
    dense = model.steps[-1]
    s_in = model.step_qparams[6].scale
    s_w = np.abs(ns["W"]["w3"]).max() / 127
    assert np.array_equal(b3, np.round(ns["W"]["b3"] / (s_in * s_w)).astype(np.int64)) and dense.bias == "b3"
    # against the float model with its weights on the int8 grid (what the weights allow): int16
    # activations leave a small fraction of the int8 scheme's error
    q8, p8 = quantize(ns["net"], ns["W"], ns["calibration"], activation_bits=8)
    grid = dict(ns["W"], **{k: on_grid(ns["W"][k], k != "w3") for k in ("w1", "wd", "w2", "w3")})
    import jax

    xs = [c["x"] for c in ns["calibration"][:6]]
    net = jax.jit(ns["net"])
    ref = np.stack([np.asarray(net(x, **grid)) for x in xs])
    err16 = np.abs(np.stack([model.run_float(qp, x=x) for x in xs]) - ref).max()
    err8 = np.abs(np.stack([q8.run_float(p8, x=x) for x in xs]) - ref).max()
    assert err16 <= 2e-4 * np.abs(ref).max() and err16 < err8 / 50, (err16, err8)  # measured 8.0e-4 against 0.084


def test_requantize_s64_is_tflites_int64_rounding():
    """fixedpoint.requantize_s64 against TFLite's MultiplyByQuantizedMultiplier(int64_t, ...) in
    Python integers: the reduced multiplier, (x * m + 2**(total - 1)) >> total."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    acc = np.concatenate([rng.integers(-(1 << 40), 1 << 40, 4000), [-(1 << 40), (1 << 40) - 1, 0, -1, 1]])
    for mult, shift in [(1 << 30, 0), (0x7FFEFFFF, -3), (0x7FFF0000, -10), (0x7FFFFFFF, 2), (1518500250, -20),
                        (1073741824 + 12345, 5), (1 << 30, 14)]:
        reduced = 0x7FFF if mult >= 0x7FFF0000 else (mult + (1 << 15)) >> 16
        want = [(int(a) * reduced + (1 << (14 - shift))) >> (15 - shift) for a in acc]
        with jax.enable_x64(True):
            got = np.asarray(fixedpoint.requantize_s64(jnp.asarray(acc, jnp.int64), mult, shift))
        assert got.tolist() == want, (mult, shift)
    with pytest.raises(ValueError, match=r"shift out of \[-31, 14\]"):
        fixedpoint.requantize_s64(jnp.zeros(2, jnp.int32), 1 << 30, 15)


def test_what_the_scheme_cannot_take_is_refused_in_one_line():
    x = [{"x": np.ones((1, 4), np.float32)}]
    w = {"w": np.ones((4, 2), np.float32)}
    cases = [
        (lambda x, w: x @ w, dict(activation_bits=12), "activation_bits=12: 8 or 16"),
        (lambda x, w: x @ w, dict(activation_bits=16, weight_bits=4), "activation_bits=16 takes int8 weights"),
        (lambda x, w: jax_hard_swish(x @ w), dict(activation_bits=16), "hard_swish at "),
    ]
    for fn, kw, msg in cases:
        with pytest.raises(QuantizeError) as e:
            quantize(fn, w, x, **kw)
        assert "\n" not in str(e.value) and msg in str(e.value), str(e.value)
    assert "has no int16 (16x8) block yet; quantize with activation_bits=8" in str(e.value)
    # a dense layer whose outputs cancel to almost nothing: its multiplier's shift passes 14, one line
    with pytest.raises(QuantizeError) as e:
        quantize(lambda x, w: x @ w, {"w": np.array([[1.0], [-1.0]], np.float32)},
                 [{"x": np.array([[1.0, 1.0000001]], np.float32)}], activation_bits=16)
    assert "\n" not in str(e.value) and "quantize: " in str(e.value) and "> 14" in str(e.value), str(e.value)


def jax_hard_swish(v):
    import jax

    return jax.nn.hard_swish(v)


SUB_MODEL = '''
import jax
import numpy as np

from specializer.quant.ptq import quantize


def diff(x, w1, w2):
    return jax.nn.relu(x @ w1 - x @ w2)


rng = np.random.default_rng(11)
W = {"w1": (rng.normal(size=(9, 6)) * 0.5).astype(np.float32), "w2": (rng.normal(size=(9, 6)) * 0.5).astype(np.float32)}
calibration = [{"x": rng.standard_normal((2, 9)).astype(np.float32)} for _ in range(8)]
diff_16x8, params = quantize(diff, W, calibration, name="diff_16x8", activation_bits=16)
diff_16x8.example_inputs = {"x": diff_16x8.inputs["x"].quantize(calibration[0]["x"])}
diff_16x8.weights = params
'''


def test_sub_in_every_variant(tmp_path):
    """A difference of two dense layers, relu: TFLite's int16 SUB (ADD's steps with left shift 15,
    XLA's code: CMSIS-NN has no subtract), near the float model and on QEMU equal to JAX."""
    ns = model_namespace(SUB_MODEL, "diff_16x8.py")
    model, qp = ns["diff_16x8"], ns["params"]
    assert [s.block.op for s in model.steps] == ["fully_connected_s16", "fully_connected_s16",
                                                 "elementwise_sub_s16"]
    sub = model.steps[-1].block
    assert sub.left_shift == 15 and sub.activation == (0, 32767)
    import jax

    xs = [c["x"] for c in ns["calibration"]]
    ref = np.stack([np.asarray(jax.jit(ns["diff"])(x, **ns["W"])) for x in xs])
    got = np.stack([model.run_float(qp, x=x) for x in xs])
    assert np.abs(got - ref).max() < 0.02 * np.abs(ref).max() and (got > 0).sum() > 10
    c = captured_source(SUB_MODEL, "diff_16x8", tmp_path)
    assert any("kept XLA's code for cmsis_nn.elementwise_sub_s16." in line for line in c.log), c.log
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_mean_over_an_axis_in_every_variant(tmp_path):
    """A mean over one axis of a dense layer's output (TFLite's int16 MEAN, XLA's code): on QEMU
    equal to JAX in every variant."""
    src = '''
import jax.numpy as jnp
import numpy as np

from specializer.quant.ptq import quantize


def rows(x, w):
    return jnp.mean((x @ w).reshape(2, 3, 4), axis=1)


rng = np.random.default_rng(12)
W = {"w": (rng.normal(size=(6, 12)) * 0.5).astype(np.float32)}
calibration = [{"x": rng.standard_normal((2, 6)).astype(np.float32)} for _ in range(8)]
rows_16x8, params = quantize(rows, W, calibration, name="rows_16x8", activation_bits=16)
rows_16x8.example_inputs = {"x": rows_16x8.inputs["x"].quantize(calibration[0]["x"])}
rows_16x8.weights = params
'''
    ns = model_namespace(src, "rows_16x8.py")
    mean = ns["rows_16x8"].steps[-1]
    assert mean.kind == "mean" and mean.block.op == "mean_s16" and mean.block.count == 3
    c = captured_source(src, "rows_16x8", tmp_path)
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_in_every_variant_equal_to_jax(tmp_path):
    c = captured_source(MODEL, "net_16x8", tmp_path)
    text = c.model_ll.read_text()
    calls = re.findall(r"call i32 @(arm_\w+)\(", text)
    assert calls == [f"arm_{op}" for op in OPS]
    # the int64 bias reaches arm_convolve_s16 through a cmsis_nn_bias_data that says so (is_int32_bias
    # 0); the 1x1 conv has none (a null pointer)
    structs = re.findall(r'bias_data = private unnamed_addr constant \{ ptr, i8 \} (.*), align 4', text)
    assert structs == ["{ ptr @net_16x8_w_b1, i8 0 }", "zeroinitializer"]
    every_variant_passes(c.model_ll, tmp_path, exact=True)
