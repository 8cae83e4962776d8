"""quantize() on ops that only pick and repeat an activation's values: jax.image.resize 'nearest'
(a gather with constant indices: TFLite's RESIZE_NEAREST_NEIGHBOR), jnp.repeat (broadcast and
reshape), a strided slice, jnp.flip. The int8 op is the float op on the int8 values, the input's
quantization kept; close to the float model, and every variant on QEMU equal to its JAX values."""

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, int_values, model_namespace

from specializer.quant.ptq import quantize

MODEL = '''
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from specializer.quant.ptq import quantize

DN = ("NHWC", "HWIO", "NHWC")


def upsampler(x, w_down, w_mix):
    a = jax.nn.relu(lax.conv_general_dilated(x, w_down, (2, 2), "SAME", dimension_numbers=DN))  # 1x4x3x5
    up = jax.image.resize(a, (1, 8, 6, 5), "nearest")                                          # 1x8x6x5
    rep = jnp.repeat(jnp.repeat(a, 2, axis=1), 2, axis=2)                                      # 1x8x6x5
    y = lax.conv_general_dilated(jnp.concatenate([up, rep, x], -1), w_mix, (1, 1), "SAME",
                                 dimension_numbers=DN)                                         # 1x8x6x3
    odd = jax.image.resize(y, (1, 5, 7, 3), "nearest")                                         # 1x5x7x3
    return jnp.flip(odd[:, 1::2], axis=2)                                                      # 1x2x7x3


rng = np.random.default_rng(5)
W = {"w_down": (rng.normal(size=(3, 3, 3, 5)) * 0.4).astype(np.float32),
     "w_mix": (rng.normal(size=(3, 3, 13, 3)) * 0.3).astype(np.float32)}
calibration = [{"x": rng.standard_normal((1, 8, 6, 3)).astype(np.float32)} for _ in range(12)]
upsampler_int8, params = quantize(upsampler, W, calibration, name="upsampler_int8")
upsampler_int8.example_inputs = {"x": upsampler_int8.inputs["x"].quantize(calibration[0]["x"])}
upsampler_int8.weights = params
'''


def quantized() -> dict:
    return model_namespace(MODEL, "upsampler_int8.py")


def test_movements_keep_the_quantization_and_stay_close_to_float():
    ns = quantized()
    model, qp = ns["upsampler_int8"], ns["params"]
    kinds = [s.kind for s in model.steps]
    assert kinds.count("move") >= 5 and "concat" in kinds, kinds
    qs = [*model.inputs.values(), *model.step_qparams]
    n_in = len(model.inputs)
    for k, s in enumerate(model.steps):
        if s.kind == "move":  # the output's quantization is its input's
            assert model.step_qparams[k] == qs[s.ins[0]], (k, s.block[0])
    # the int8 op is the float op on int8 values: nearest resize of the int8 map, exactly
    x8 = model.inputs["x"].quantize(ns["calibration"][3]["x"])
    vals = int_values(model, x=x8, **qp)
    first = next(k for k, s in enumerate(model.steps) if s.kind == "move")
    src = np.asarray(vals[model.steps[first].ins[0]])
    np.testing.assert_array_equal(np.asarray(vals[n_in + first]), np.repeat(src, 2, axis=1))
    for sample in ns["calibration"][:4]:  # inside the calibrated ranges: rounding, no saturation
        x = sample["x"]
        got, ref = model.run_float(qp, x=x), np.asarray(ns["upsampler"](x, **ns["W"]))
        assert got.shape == ref.shape == (1, 2, 7, 3)
        assert np.abs(got - ref).max() <= 0.05 * np.abs(ref).max()


def test_in_every_variant_equal_to_jax(tmp_path):
    every_variant_passes(captured_source(MODEL, "upsampler_int8", tmp_path).model_ll, tmp_path, exact=True)


def test_take_in_bounds_clipping_and_out_of_bounds():
    """jnp.take's default mode fills out-of-bounds indices: with every index in bounds it is a
    movement (the int8 result is np.take of the int8 values), with one out of bounds it is refused
    in one line; mode='clip' picks wherever its indices point."""
    import jax.numpy as jnp

    from specializer.quant.graph import QuantizeError

    cal = [{"x": np.random.default_rng(1).normal(size=(1, 4, 3)).astype(np.float32)}]
    m, qp = quantize(lambda x: jnp.take(x, np.array([0, 0, 3, 1]), axis=1), {}, cal)
    x8 = m.inputs["x"].quantize(cal[0]["x"])
    np.testing.assert_array_equal(np.asarray(m(x=x8, **qp)), np.take(x8, [0, 0, 3, 1], axis=1))
    m, qp = quantize(lambda x: jnp.take(x, np.array([0, 7]), axis=2, mode="clip"), {}, cal)
    np.testing.assert_array_equal(np.asarray(m(x=x8, **qp)), np.take(x8, [0, 2], axis=2))
    with pytest.raises(QuantizeError) as e:
        quantize(lambda x: jnp.take(x, np.array([0, 5]), axis=1), {}, cal)
    assert "\n" not in str(e.value) and "out of bounds" in str(e.value)


def test_split_is_a_slice_per_part():
    import jax

    rng = np.random.default_rng(9)
    w = {"w": (rng.normal(size=(5, 9)) * 0.5).astype(np.float32)}

    def gates(x, w):  # one product split three ways (a recurrent cell's gates), unequal parts
        a, b, c = jax.numpy.split(x @ w, [2, 6], axis=-1)
        return jax.nn.sigmoid(a), jax.numpy.tanh(b), c

    cal = [{"x": rng.normal(size=(2, 5)).astype(np.float32)} for _ in range(8)]
    model, qp = quantize(gates, w, cal)
    assert [s.kind for s in model.steps] == ["dense", "move", "move", "move", "logistic", "tanh"]
    x8 = model.inputs["x"].quantize(cal[0]["x"])
    vals = int_values(model, x=x8, **qp)
    dense = np.asarray(vals[1])
    for k, (lo, hi) in enumerate(((0, 2), (2, 6), (6, 9))):  # the int8 parts are the int8 product's columns
        np.testing.assert_array_equal(np.asarray(vals[2 + k]), dense[:, lo:hi])
    got = model.run_float(qp, **cal[1])
    ref = gates(cal[1]["x"], **w)
    for g, r, q in zip(got, ref, model.outputs):
        assert np.abs(g - np.asarray(r)).max() <= 4 * q.scale  # the parts keep the product's coarser scale
