"""int8 LOGISTIC, TANH, HARD_SWISH and LEAKY_RELU read from .tflite files against TFLite Micro's
own kernels (the `tflite-micro` package), bit-exact: one single-op model per case, every one of
the 256 int8 input values fed (spread over the inputs of an odd shape) plus random inputs, all
through one jit of the reader's function. Scales cover the fixed-point paths' edges: saturation
outside the input radius (down to a radius of 0), left and right shifts of each multiplier,
int16 saturation in HARD_SWISH, negative and large LEAKY_RELU alphas. What the reader refuses
is refused in one line naming the operator."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from every_variant import every_variant_passes
from test_tflite_import import OP, Tflm, act8, model_bytes, operator
from tflite_micro.tensorflow.lite.micro.compression import model_editor as me
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

from specializer.errors import UserError
from specializer.importers.tflite import read_tflite


def leaky_options(alpha):
    o = fb.LeakyReluOptionsT()
    o.alpha = alpha
    return o, fb.BuiltinOptions.LeakyReluOptions


def one_op(code, shape, in_q, out_q, options=(), out_shape=None):
    x, y = act8(shape, *in_q, "x"), act8(out_shape or shape, *out_q, "y")
    return model_bytes([operator(code, [x], [y], *options)], [x], [y])


def inputs(shape, seed, n_random=3) -> np.ndarray:
    """Every int8 value once (shuffled, spread over as many inputs as it takes, the last one
    topped up with repeats), then n_random uniform inputs."""
    rng = np.random.default_rng(seed)
    size = math.prod(shape)
    k = -(-256 // size)
    every = np.resize(rng.permutation(np.arange(-128, 128)), k * size).reshape(k, *shape)
    return np.concatenate([every, rng.integers(-128, 128, (n_random, *shape))]).astype(np.int8)


def compare(data: bytes, tmp_path, seed=0) -> tuple[np.ndarray, np.ndarray]:
    """The reader's function (jit once, all inputs batched) against TFLite Micro's, bit for bit:
    (the inputs, the outputs)."""
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    model = read_tflite(path)
    xs = inputs(model.inputs[0].shape, seed)
    assert np.unique(xs).size == 256
    got = np.asarray(jax.jit(jax.vmap(model))(xs))
    tflm = Tflm(data)
    want = np.stack([tflm.run([x], 1)[0][0] for x in xs])
    assert got.dtype == want.dtype == np.int8 and got.shape == want.shape
    bad = got != want
    assert not bad.any(), (f"{int(bad.sum())} outputs differ; (input, ours, TFLite Micro's): "
                           f"{list(zip(xs[bad][:8].tolist(), got[bad][:8].tolist(), want[bad][:8].tolist()))}")
    return xs, got


# case -> (shape, input (scale, zero point), output (scale, zero point) or None for the op's fixed
# one, fewest distinct outputs: a case must not be all clamp)
SIGMOID_LIKE_CASES = {
    "scale0.1_all_values_in_one": ((1, 256), (0.1, 3), 40),
    "small_scale_odd_4d": ((1, 5, 7, 3), (0.02, -10), 20),
    "power_of_two_scale_2d": ((2, 13), (0.0625, 5), 40),
    "scale0.5_radius15": ((1, 256), (0.5, 20), 12),
    "scale3_radius3_2d": ((2, 13), (3.0, -7), 4),
    "scale20_radius0_all_saturated": ((1, 256), (20.0, 0), 2),
    "tiny_scale_odd_4d": ((1, 5, 7, 3), (1e-4, 0), 3),
}


@pytest.mark.parametrize("case", SIGMOID_LIKE_CASES)
@pytest.mark.parametrize("code, out_q", [(OP.LOGISTIC, (1 / 256, -128)), (OP.TANH, (1 / 128, 0))],
                         ids=["logistic", "tanh"])
def test_logistic_and_tanh(code, out_q, case, tmp_path):
    shape, in_q, distinct = SIGMOID_LIKE_CASES[case]
    xs, out = compare(one_op(code, shape, in_q, out_q), tmp_path)
    assert np.unique(out).size >= distinct
    if case == "scale20_radius0_all_saturated":
        # TFLite Micro tests input <= -radius first: with radius 0 the zero point itself gives -128
        zp = in_q[1]
        assert (out[xs <= zp] == -128).all() and (out[xs > zp] == 127).all()


HARD_SWISH_CASES = {  # shape, input q, output q, fewest distinct outputs
    "typical": ((1, 256), (0.05, 3), (0.026, -113), 100),
    "reluish_right_shift_odd_4d": ((1, 5, 7, 3), (0.005, -20), (0.004, -10), 100),
    "tiny_scale_2d": ((2, 13), (0.0005, 0), (0.0003, 0), 100),
    "large_scale_both_saturations": ((1, 256), (0.5, 10), (0.4, -100), 100),
    "very_large_scale_2d": ((2, 13), (2.0, 0), (1.5, -128), 50),
    # output multiplier 2**-16: the int16 rounding division's mask wraps to -1 (+-1 around the zero point)
    "output_exponent_16_int16_wrap": ((1, 256), (0.01, 0), (10.0, 5), 2),
    # multipliers in double: the float32 recipe gives an int16 output multiplier 1 higher here
    "double_not_float32_multiplier": ((1, 256), (0.20884805917739868, 0), (0.3727516233921051, -2), 50),
}


@pytest.mark.parametrize("case", HARD_SWISH_CASES)
def test_hard_swish(case, tmp_path):
    shape, in_q, out_q, distinct = HARD_SWISH_CASES[case]
    _, out = compare(one_op(OP.HARD_SWISH, shape, in_q, out_q), tmp_path)
    assert np.unique(out).size >= distinct


LEAKY_RELU_CASES = {  # shape, input q, output q, alpha, fewest distinct outputs
    "same_quantization": ((1, 256), (0.05, 3), (0.05, 3), 0.2, 150),
    "rescaled_odd_4d": ((1, 5, 7, 3), (0.05, -7), (0.04, 10), 0.1, 100),
    "identity_left_shift_2d": ((2, 13), (0.1, 0), (0.03, -20), 0.3, 100),
    "small_multipliers": ((1, 256), (0.02, 20), (0.5, -5), 0.5, 6),
    "negative_alpha": ((1, 256), (0.05, 0), (0.05, 0), -0.5, 100),
    "alpha_above_1_2d": ((2, 13), (0.05, 0), (0.06, 0), 1.5, 100),
    "alpha_0": ((1, 256), (0.05, -30), (0.03, -128), 0.0, 100),
    # in float32 0.05 * 0.25 / 0.04 is exactly 5/16 (a rounding tie at every 16th input); in double,
    # as TFLite Micro computes it, a little above
    "alpha_multiplier_double_not_float32": ((1, 256), (0.05, 3), (0.04, -20), 0.25, 100),
    # the float32 below 0.05 over 0.04: exactly 1.25 in float32, a little below in double
    "identity_multiplier_double_not_float32": ((1, 256), (0.04999999701976776, 5), (0.04, -3), 0.5, 100),
}


@pytest.mark.parametrize("case", LEAKY_RELU_CASES)
def test_leaky_relu(case, tmp_path):
    shape, in_q, out_q, alpha, distinct = LEAKY_RELU_CASES[case]
    _, out = compare(one_op(OP.LEAKY_RELU, shape, in_q, out_q, leaky_options(alpha)), tmp_path)
    assert np.unique(out).size >= distinct


def test_a_chain_of_the_four(tmp_path):
    """LEAKY_RELU -> HARD_SWISH -> LOGISTIC and -> TANH: each layer's output as TFLite Micro's."""
    x, h = act8((2, 13), 0.05, 3, "x"), act8((2, 13), 0.04, -20, "h")
    s = act8((2, 13), 0.03, -110, "s")
    lo, ta = act8((2, 13), 1 / 256, -128, "lo"), act8((2, 13), 1 / 128, 0, "ta")
    ops = [operator(OP.LEAKY_RELU, [x], [h], *leaky_options(0.25)), operator(OP.HARD_SWISH, [h], [s]),
           operator(OP.LOGISTIC, [s], [lo]), operator(OP.TANH, [s], [ta])]
    data = model_bytes(ops, [x], [lo, ta])
    path = tmp_path / "chain.tflite"
    path.write_bytes(data)
    model = read_tflite(path)
    xs = inputs((2, 13), 5)
    every = jax.jit(jax.vmap(model.tensors))(xs)
    tflm = Tflm(data)
    for k, xk in enumerate(xs):
        _, want = tflm.run([xk], 2, [layer.output for layer in model.layers])
        for layer in model.layers:
            np.testing.assert_array_equal(np.asarray(every[layer.output][k]), want[layer.output],
                                          err_msg=f"operator {layer.op} ({layer.name})")


def test_a_network_with_the_four_in_every_variant_equal_to_tflite_micro(tmp_path):
    """CONV_2D -> LEAKY_RELU -> HARD_SWISH -> LOGISTIC and TANH, captured (TFLite Micro's outputs
    are the reference) and run on QEMU in every variant: value for value."""
    from test_tflite_import import const, conv_options, out_scale, rand8

    from specializer.capture.capture import capture

    rng = np.random.default_rng(31)
    in_s, ws = 0.05, rng.uniform(0.5, 2.0, 5) / 127
    s1 = out_scale(in_s, ws.mean(), 18) / 6
    x, c = act8((1, 7, 6, 2), in_s, 3, "x"), act8((1, 7, 6, 5), s1, 4, "c")
    h, sw = act8((1, 7, 6, 5), s1 * 0.7, -60, "h"), act8((1, 7, 6, 5), s1 * 0.5, -90, "sw")
    lo, ta = act8((1, 7, 6, 5), 1 / 256, -128, "lo"), act8((1, 7, 6, 5), 1 / 128, 0, "ta")
    w = const(rand8(rng, (5, 3, 3, 2), -127), ws, 0, "w")
    b = const(rng.integers(-800, 800, 5).astype(np.int32), in_s * ws, 0, "b")
    ops = [operator(OP.CONV_2D, [x, w, b], [c], *conv_options()), operator(OP.LEAKY_RELU, [c], [h], *leaky_options(0.2)),
           operator(OP.HARD_SWISH, [h], [sw]), operator(OP.LOGISTIC, [sw], [lo]), operator(OP.TANH, [sw], [ta])]
    data = model_bytes(ops, [x], [lo, ta])
    path = tmp_path / "acts.tflite"
    path.write_bytes(data)
    cap = capture(path, None, tmp_path / "cap")
    want, _ = Tflm(data).run([cap.manifest.inputs[0].array()], 2)
    for out, wv in zip(cap.manifest.outputs, want):
        np.testing.assert_array_equal(out.array(), wv)
        assert len(np.unique(wv)) > 20  # the activations' curves are exercised, not one saturated value
    every_variant_passes(cap.model_ll, tmp_path, exact=True)


# ---------------------------------------------------------------- refused, in one line


def two_inputs(code):
    x, y = act8((1, 8), 0.1, 0, "x"), act8((1, 8), 1 / 256, -128, "y")
    return model_bytes([operator(code, [x, x], [y])], [x], [y])


def float_output():
    x = act8((1, 8), 0.1, 0, "x")
    y = me.Tensor(shape=(1, 8), dtype=fb.TensorType.FLOAT32, name="y")
    return model_bytes([operator(OP.HARD_SWISH, [x], [y])], [x], [y])


def per_channel_output():
    x, y = act8((1, 2), 0.1, 0, "x"), act8((1, 2), 1 / 128, 0, "y")
    h = me.Tensor(shape=(1, 2), dtype=fb.TensorType.INT8, quantization=me.Quantization([0.1, 0.2], [0, 0], 1),
                  name="h")
    ops = [operator(OP.LEAKY_RELU, [x], [h], *leaky_options(0.1)), operator(OP.TANH, [h], [y])]
    return model_bytes(ops, [x], [y])


REFUSED = {  # case -> (model, the line, whether TFLite Micro refuses it too)
    "logistic_zero_point": (
        lambda: one_op(OP.LOGISTIC, (1, 8), (0.1, 0), (1 / 256, 0)),
        "m.tflite: operator 0 (LOGISTIC): int8 output scale 0.00390625 / zero point 0; LOGISTIC needs scale "
        "1/256, zero point -128 (TFLite Micro's kernel writes 1/256 steps from -128; it refuses another zero point)",
        True),
    "logistic_scale": (
        lambda: one_op(OP.LOGISTIC, (1, 8), (0.1, 0), (1 / 128, -128)),
        "m.tflite: operator 0 (LOGISTIC): int8 output scale 0.0078125 / zero point -128; LOGISTIC needs scale "
        "1/256, zero point -128 (TFLite Micro's kernel writes 1/256 steps from -128; it refuses another zero point)",
        False),
    "tanh_output": (
        lambda: one_op(OP.TANH, (1, 8), (0.1, 0), (1 / 256, -128)),
        "m.tflite: operator 0 (TANH): int8 output scale 0.00390625 / zero point -128; TANH needs scale 1/128, "
        "zero point 0 (TFLite Micro's kernel writes 1/128 steps around 0 whatever the file says)",
        False),
    "logistic_tiny_input_scale": (
        lambda: one_op(OP.LOGISTIC, (1, 8), (1e-9, 0), (1 / 256, -128)),
        f"m.tflite: operator 0 (LOGISTIC): input scale {float(np.float32(1e-9))} is outside what TFLite Micro's "
        "int8 LOGISTIC computes (2**-28 to 2**35)",
        None),
    "hard_swish_output_scale": (
        lambda: one_op(OP.HARD_SWISH, (1, 8), (0.5, 0), (0.003, 0)),
        "m.tflite: operator 0 (HARD_SWISH): output scale 0.003000000026077032 is too small for input scale 0.5: "
        "TFLite Micro's HARD_SWISH needs input scale / 128 / output scale below 1",
        True),
    "leaky_relu_alpha_inf": (
        lambda: one_op(OP.LEAKY_RELU, (1, 8), (0.1, 0), (0.1, 0), leaky_options(float("inf"))),
        "m.tflite: operator 0 (LEAKY_RELU): alpha inf is not a finite number", None),
    "shape": (
        lambda: one_op(OP.TANH, (2, 13), (0.1, 0), (1 / 128, 0), out_shape=(1, 26)),
        "m.tflite: operator 0 (TANH): output shape (1, 26) differs from the input's (2, 13)", None),
    "two_inputs": (lambda: two_inputs(OP.LOGISTIC),
                   "m.tflite: operator 0 (LOGISTIC): 2 inputs (it takes one)", None),
    "float_output": (float_output, "m.tflite: operator 0 (HARD_SWISH): output type FLOAT32 with an INT8 input "
                                   "(the reader takes int8 -> int8 and int16 -> int16)", None),
    "per_channel": (per_channel_output, "m.tflite: operator 0 (LEAKY_RELU): output (tensor 1) needs one scale and "
                                        "zero point (per-tensor int8)", None),
}


@pytest.mark.parametrize("case", REFUSED)
def test_refused_in_one_line(case, tmp_path):
    build, line, tflm_refuses = REFUSED[case]
    data = build()
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    with pytest.raises(UserError) as e:
        read_tflite(path)
    assert str(e.value) == line
    if tflm_refuses:  # its Prepare fails: the interpreter cannot allocate the model
        with pytest.raises(RuntimeError):
            Tflm(data)


@pytest.mark.parametrize("code, fixed, other", [(OP.LOGISTIC, (1 / 256, -128), (1 / 128, -128)),
                                                (OP.TANH, (1 / 128, 0), (1 / 256, -128))],
                         ids=["logistic", "tanh"])
def test_tflm_ignores_another_output_quantization(code, fixed, other):
    """Why those are refused and not followed: TFLite Micro runs them, but writes the same bytes as
    for the op's fixed output quantization, so they would mean another function."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    (a,), _ = Tflm(one_op(code, (1, 256), (0.05, 0), fixed)).run([x], 1)
    (b,), _ = Tflm(one_op(code, (1, 256), (0.05, 0), other)).run([x], 1)
    np.testing.assert_array_equal(a, b)
