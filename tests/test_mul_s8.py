"""int8 elementwise multiply (TFLite's MUL, CMSIS-NN's arm_elementwise_mul_s8): the .tflite reader
against TFLite Micro over shapes, zero points, a fused ReLU and a multiplier above 1; the shim's
function on the host against the block; a gated network read from a .tflite file (a conv times
its own sigmoid, then a squeeze-and-excite gate, broadcast, then a dense layer) bit-exact with
TFLite Micro in every variant on QEMU; and
quantize() of a JAX model that multiplies two activations, in every variant equal to JAX."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, model_namespace
from test_cmsis_nn import host, nn_call, ptr  # noqa: F401
from test_tflite_import import (ACT, OP, act8, actf, check, const, conv_options, fb, me, model_bytes, operator,
                                out_scale, rand8, spread)

from specializer.capture import imported
from specializer.capture.capture import capture
from specializer.errors import UserError
from specializer.importers.tflite import read_tflite
from specializer.quant import blocks
from specializer.quant.params import MulParams
from specializer.quant.ptq import quantize


def mul_options(act=ACT.NONE):
    o = fb.MulOptionsT()
    o.fusedActivationFunction = act
    return o, fb.BuiltinOptions.MulOptions


def mul_model(shape=(1, 5, 6, 3), q1=(0.05, 3), q2=(0.08, -20), out=(0.02, 5), act=ACT.NONE, shape_2=None,
              swap=False, constant=False) -> bytes:
    """One MUL; input 2 of shape_2 when given (broadcast), the inputs in the other order with
    swap, input 2 a constant (random int8 values) with constant."""
    x1, y = act8(shape, *q1, "x1"), act8(shape, *out, "y")
    if constant:
        x2 = me.Tensor(shape=shape_2 or shape, dtype=fb.TensorType.INT8, name="k",
                       data=rand8(np.random.default_rng(1), shape_2 or shape),
                       quantization=me.Quantization([float(q2[0])], [int(q2[1])]))
        return model_bytes([operator(OP.MUL, [x1, x2], [y], *mul_options(act))], [x1], [y])
    x2 = act8(shape_2 or shape, *q2, "x2")
    ins = [x2, x1] if swap else [x1, x2]
    return model_bytes([operator(OP.MUL, ins, [y], *mul_options(act))], ins, [y])


CASES = {
    "nhwc": dict(),
    "odd_2d": dict(shape=(3, 7), q1=(0.1, -128), q2=(0.1, 127), out=(0.5, -7)),
    "relu": dict(act=ACT.RELU, out=(0.01, -30)),
    "multiplier_above_1": dict(q1=(0.5, 0), q2=(0.5, 0), out=(0.2, 0)),  # 1.25: a left shift
    "one_value": dict(shape=(1,), q1=(0.3, 1), q2=(0.2, 2), out=(4.0, -3)),
    "broadcast_gate": dict(shape=(1, 4, 4, 6), shape_2=(1, 1, 1, 6)),  # squeeze-and-excite
    "broadcast_gate_first": dict(shape=(1, 4, 4, 6), shape_2=(1, 1, 1, 6), swap=True, act=ACT.RELU6),
    "broadcast_row": dict(shape=(3, 7), shape_2=(7,), q1=(0.1, -128), q2=(0.1, 127), out=(0.5, -7)),
    "constant_per_channel": dict(shape=(1, 4, 4, 6), shape_2=(6,), constant=True),
    "constant_whole": dict(shape=(2, 9), constant=True, q2=(0.02, 4), out=(0.08, 0)),
}


@pytest.mark.parametrize("case", CASES)
def test_reader_equals_tflite_micro(case, tmp_path):
    out = check(mul_model(**CASES[case]), tmp_path, n=4)
    assert spread(out) >= min(3, out.size // 2), out


def test_float_mul_equals_tflite_micro(tmp_path):
    """The float reader's MUL: two activations, one broadcast, then a constant factor, RELU."""
    rng = np.random.default_rng(3)
    x, g, h, y = actf((1, 3, 4, 5), "x"), actf((1, 1, 1, 5), "g"), actf((1, 3, 4, 5), "h"), actf((1, 3, 4, 5), "y")
    k = const(rng.normal(size=5).astype(np.float32), name="k")
    ops = [operator(OP.MUL, [g, x], [h], *mul_options()), operator(OP.MUL, [h, k], [y], *mul_options(ACT.RELU))]
    out = check(model_bytes(ops, [x, g], [y]), tmp_path, n=3)
    assert (out > 0).sum() > out.size // 4 and (out == 0).sum() > out.size // 4


def test_shim_equals_the_block_on_the_host(host):  # noqa: F811
    host.arm_elementwise_mul_s8.restype = ctypes.c_int32
    rng = np.random.default_rng(2)
    for n, o1, o2, oo, m, s, act in [(37, -3, 20, 5, 1 << 30, -6, (-128, 127)),
                                     (64, 128, -127, 100, 1900000000, -9, (-20, 90)),
                                     (5, 0, 0, 0, 1 << 30, 2, (-128, 127))]:
        p = MulParams(shape=(n,), input_1_offset=o1, input_2_offset=o2, out_offset=oo, out_mult=m, out_shift=s,
                      activation=act)
        lim = 128 if s < 0 else 8  # a left shift: small values, else every product saturates
        a, b = (rng.integers(-lim, lim, n).astype(np.int8) for _ in range(2))
        got = np.full(n, 99, np.int8)
        st = nn_call(host, "arm_elementwise_mul_s8", input_1_vect=ptr(a), input_2_vect=ptr(b), input_1_offset=o1,
                     input_2_offset=o2, output=ptr(got), out_offset=oo, out_mult=m, out_shift=s,
                     out_activation_min=act[0], out_activation_max=act[1], block_size=n)
        assert st == 0
        want = np.asarray(blocks.mul(a, b, p))
        np.testing.assert_array_equal(got, want)
        assert len(np.unique(want)) > min(4, n // 2)


def gated(seed=0) -> bytes:
    """x [1, 5, 5, 4] -> conv 3x3 (6 channels) -> h; LOGISTIC(h) -> g; MUL(h, g) -> m (SiLU, a gate:
    two tensors of one shape); MEAN of m over H, W (keep_dims) -> LOGISTIC -> s [1, 1, 1, 6];
    MUL(m, s) broadcast -> e (a squeeze-and-excite gate) -> reshape -> dense 150 -> 3."""
    rng = np.random.default_rng(seed)
    x = act8((1, 5, 5, 4), 0.05, 2, "x")
    w_s = rng.uniform(0.5, 2.0, 6) / 127
    h_s = out_scale(0.05, w_s.mean(), 36)
    h = act8((1, 5, 5, 6), h_s, -3, "h")
    w = const(rand8(rng, (6, 3, 3, 4), -127), w_s, 0)
    b = const(rng.integers(-3000, 3000, 6).astype(np.int32), 0.05 * w_s, 0, "b")
    g = act8((1, 5, 5, 6), 1 / 256, -128, "g")  # TFLite's LOGISTIC output
    m = act8((1, 5, 5, 6), h_s / 2, -60, "m")
    a = act8((1, 1, 1, 6), h_s / 8, 0, "a")
    s = act8((1, 1, 1, 6), 1 / 256, -128, "s")
    e = act8((1, 5, 5, 6), h_s / 4, -30, "e")
    r = act8((1, 150), h_s / 4, -30, "r")
    y = act8((1, 3), out_scale(h_s / 4, 1 / 127, 150), 1, "y")
    fw = const(rand8(rng, (3, 150), -127), [1 / 127], None, "fw")
    mo = fb.ReducerOptionsT()
    mo.keepDims = True
    ops = [operator(OP.CONV_2D, [x, w, b], [h], *conv_options()),
           operator(OP.LOGISTIC, [h], [g]),
           operator(OP.MUL, [h, g], [m], *mul_options()),
           operator(OP.MEAN, [m, const(np.array([1, 2], np.int32), name="axes")], [a], mo,
                    fb.BuiltinOptions.ReducerOptions),
           operator(OP.LOGISTIC, [a], [s]),
           operator(OP.MUL, [m, s], [e], *mul_options()),
           operator(OP.RESHAPE, [e, const(np.array([1, 150], np.int32), name="shape")], [r]),
           operator(OP.FULLY_CONNECTED, [r, fw], [y], fb.FullyConnectedOptionsT(),
                    fb.BuiltinOptions.FullyConnectedOptions)]
    return model_bytes(ops, [x], [y])


def test_gated_network_bit_exact_with_tflite_micro_in_every_variant(tmp_path):
    """Both gates in one network: the MUL of two tensors of one shape onto CMSIS-NN, the
    broadcasting one the block's own arithmetic (XLA's code: CMSIS-NN's function takes one
    shape), the rest on CMSIS-NN; bit-exact with TFLite Micro in every variant."""
    path = tmp_path / "gated.tflite"
    path.write_bytes(gated())
    assert spread(check(gated(), tmp_path, n=3)) >= 5
    c = capture(path, None, tmp_path / "cap")
    assert sum("onto arm_elementwise_mul_s8" in line for line in c.log) == 1, c.log
    assert any("broadcasting (arm_elementwise_mul_s8 takes two tensors of one shape)" in line for line in c.log), c.log
    x = c.manifest.inputs[0].array()
    (want,) = imported.run_tflite_micro(imported.read(path), [(x,)])[0]
    np.testing.assert_array_equal(c.manifest.outputs[0].array(), want)
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_a_broadcast_of_both_inputs_is_refused_in_one_line(tmp_path):
    x1, x2, y = act8((1, 4, 1), 0.1, 0, "x1"), act8((1, 1, 3), 0.1, 0, "x2"), act8((1, 4, 3), 0.1, 0, "y")
    path = tmp_path / "bc.tflite"
    path.write_bytes(model_bytes([operator(OP.MUL, [x1, x2], [y], *mul_options())], [x1, x2], [y]))
    with pytest.raises(UserError, match=r"^bc.tflite: operator 0 \(MUL\): \[1, 4, 1\] \* \[1, 1, 3\] does not "
                                        r"broadcast one input to the other's shape, the output's \[1, 4, 3\]$"):
        read_tflite(path)


MODEL = '''
import jax
import numpy as np
from jax import lax

from specializer.quant.ptq import quantize

DN = ("NHWC", "HWIO", "NHWC")


def float_gate(x, w, b, v, c, fc):
    """A gated unit as a user writes one: a value path times a sigmoid gate path, then dense."""
    value = jax.nn.relu(lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN) + b)
    gate = jax.nn.sigmoid(lax.conv_general_dilated(x, v, (1, 1), "SAME", dimension_numbers=DN) + c)
    return (value * gate).reshape(1, -1) @ fc


rng = np.random.default_rng(5)
W = {"w": (rng.standard_normal((3, 3, 3, 6)) * 0.4).astype(np.float32),
     "b": (rng.standard_normal(6) * 0.1).astype(np.float32),
     "v": (rng.standard_normal((3, 3, 3, 6)) * 0.4).astype(np.float32),
     "c": (rng.standard_normal(6) * 0.1).astype(np.float32),
     "fc": (rng.standard_normal((5 * 7 * 6, 3)) * 0.1).astype(np.float32)}
calibration = [{"x": rng.standard_normal((1, 5, 7, 3)).astype(np.float32)} for _ in range(12)]
gate_int8, params = quantize(float_gate, W, calibration, name="gate_int8")
gate_int8.example_inputs = {"x": gate_int8.inputs["x"].quantize(calibration[0]["x"])}
gate_int8.weights = params
'''


def test_quantize_reads_a_product_of_two_activations_close_to_float():
    ns = model_namespace(MODEL, "gate_int8.py")
    model, qp = ns["gate_int8"], ns["params"]
    assert [s.kind for s in model.steps] == ["conv", "conv", "logistic", "mul", "reshape", "dense"]
    q = model.outputs[0]
    for cal in ns["calibration"][:4]:  # inside the ranges it was calibrated for (no saturation)
        x = cal["x"]
        (got,) = model.run_float(qp, x=x)
        ref = np.asarray(ns["float_gate"](x, **ns["W"]))
        assert np.abs(got - ref).max() <= 4 * q.scale, (got, ref)


def test_quantize_takes_a_constant_factor_as_an_int8_tensor():
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    scale = np.linspace(-1.5, 2.0, 6).astype(np.float32)

    def f(x, s):
        return jnp.tanh(x) * s + 0.25  # a per-channel factor, then a constant that is no bias

    cal = [{"x": rng.normal(size=(2, 6)).astype(np.float32)} for _ in range(8)]
    model, qp = quantize(f, {"s": scale}, cal)
    assert [s.kind for s in model.steps] == ["tanh", "const", "mul", "const", "add"]
    assert qp["s"].shape == (2, 6) and qp["s"].dtype == np.int8  # at the product's shape
    q = model.outputs[0]
    for c in cal:
        got = model.run_float(qp, **c)
        assert np.abs(got - np.asarray(f(c["x"], scale))).max() <= 3 * q.scale


def test_quantized_in_every_variant_equal_to_jax(tmp_path):
    c = captured_source(MODEL, "gate_int8", tmp_path)
    assert any("onto arm_elementwise_mul_s8" in line for line in c.log)
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_quantize_reads_a_broadcast_gate():
    """A squeeze-and-excite gate written in JAX: the value times sigmoid(mean over H, W), the
    gate broadcast over the pixels (the block's input 2, whichever order the product names them)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def se(x, w, fc):
        v = jax.nn.relu(lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
        g = jax.nn.sigmoid(jnp.mean(v, axis=(1, 2), keepdims=True))
        return (g * v).reshape(1, -1) @ fc

    rng = np.random.default_rng(8)
    weights = {"w": (rng.standard_normal((3, 3, 2, 5)) * 0.5).astype(np.float32),
               "fc": (rng.standard_normal((4 * 4 * 5, 3)) * 0.1).astype(np.float32)}
    cal = [{"x": rng.standard_normal((1, 4, 4, 2)).astype(np.float32)} for _ in range(10)]
    model, qp = quantize(se, weights, cal)
    assert [s.kind for s in model.steps] == ["conv", "mean", "logistic", "mul", "reshape", "dense"]
    mul = next(s.block for s in model.steps if s.kind == "mul")
    assert mul.shape == (1, 4, 4, 5) and mul.shape_2 == (1, 1, 1, 5)
    for c in cal[:4]:
        (got,) = model.run_float(qp, x=c["x"])
        ref = np.asarray(se(c["x"], **weights))
        assert np.abs(got - ref).max() <= 4 * model.outputs[0].scale, (got, ref)
