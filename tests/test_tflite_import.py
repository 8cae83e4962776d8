"""The .tflite reader (specializer.importers.tflite) against TFLite Micro's reference interpreter
(the `tflite-micro` package: TFLite Micro's own kernels, built for the host).

Small models built here with TFLite Micro's model writer, one per op and option, run through both
on the same inputs: int8 outputs bit-exact, float ones within 1e-5 relative. The MLPerf Tiny
reference models (../shared/models/mlperf_tiny/, beside the checkout) on 8 inputs each, every
layer's output compared, so a saturated softmax cannot hide a wrong layer (20 inputs in every
variant on QEMU: test_tflite_capture.py with --slow)."""

from __future__ import annotations

import inspect
from pathlib import Path

import jax
import numpy as np
import pytest
from tflite_micro.python.tflite_micro import runtime
from tflite_micro.tensorflow.lite.micro.compression import model_editor as me
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

from specializer.errors import UserError
from specializer.importers.tflite import read_tflite
from specializer.importers.tflite_int8 import tflite_multiplier
from specializer.quant import blocks, calls
from specializer.quant.params import ConvParams

MLPERF = Path(__file__).resolve().parents[2] / "shared" / "models" / "mlperf_tiny"
OP = fb.BuiltinOperator
ACT = fb.ActivationFunctionType
SAME, VALID = fb.Padding.SAME, fb.Padding.VALID
# every tensor kept: the largest MLPerf Tiny model's activations take about 0.5 MB
ARENA = 8 << 20


# ---------------------------------------------------------------- the oracle

class Tflm:
    """TFLite Micro's interpreter on one model, keeping every tensor in its own memory
    (kPreserveAllTensors), so each layer's output can be read after a run."""

    def __init__(self, model: bytes):
        self.it = runtime.Interpreter.from_bytes(bytes(model), arena_size=ARENA,
                                                 intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)

    def run(self, xs, n_outputs: int, tensors=()) -> tuple[list[np.ndarray], dict[int, np.ndarray]]:
        """The outputs for inputs xs, and the tensors asked for (by index)."""
        for i, x in enumerate(xs):
            self.it.set_input(x, i)
        self.it.invoke()
        return ([self.it.get_output(i) for i in range(n_outputs)],
                {t: self.it.GetTensor(t, 0)["tensor_data"] for t in tensors})


# ---------------------------------------------------------------- building small models

def act8(shape, scale, zp, name="t"):
    return me.Tensor(shape=shape, dtype=fb.TensorType.INT8, quantization=me.Quantization(float(scale), int(zp)),
                     name=name)


def actf(shape, name="t"):
    return me.Tensor(shape=shape, dtype=fb.TensorType.FLOAT32, name=name)


def const(data: np.ndarray, scales=None, axis=None, name="w"):
    dtype = {np.dtype("int8"): fb.TensorType.INT8, np.dtype("int32"): fb.TensorType.INT32,
             np.dtype("float32"): fb.TensorType.FLOAT32}[data.dtype]
    q = None
    if scales is not None:
        scales = [float(s) for s in np.atleast_1d(scales)]
        q = me.Quantization(scales, [0] * len(scales), axis)
    return me.Tensor(shape=data.shape, dtype=dtype, data=data, quantization=q, name=name)


def operator(code, inputs, outputs, options=None, options_type=0):
    t = fb.OperatorT()
    if options is not None:
        t.builtinOptionsType, t.builtinOptions = options_type, options
    return me.Operator(opcode=code, inputs=inputs, outputs=outputs, _fb=t)


def model_bytes(ops, inputs, outputs) -> bytes:
    return bytes(me.Model(subgraphs=[me.Subgraph(operators=ops, inputs=inputs, outputs=outputs)]).build())


def conv_options(padding=SAME, stride=(1, 1), dilation=(1, 1), act=ACT.NONE, depth_multiplier=None):
    if depth_multiplier is None:
        o, kind = fb.Conv2DOptionsT(), fb.BuiltinOptions.Conv2DOptions
    else:
        o, kind = fb.DepthwiseConv2DOptionsT(), fb.BuiltinOptions.DepthwiseConv2DOptions
        o.depthMultiplier = depth_multiplier
    o.padding, (o.strideH, o.strideW), (o.dilationHFactor, o.dilationWFactor) = padding, stride, dilation
    o.fusedActivationFunction = act
    return o, kind


def out_size(size, k, stride, dilation, padding):
    eff = (k - 1) * dilation + 1
    return -(-size // stride) if padding == SAME else (size - eff) // stride + 1


def out_scale(in_scale, w_scale, depth):
    """An output scale that spreads the accumulator (about 74 * 73 * sqrt(depth) for uniform
    int8 data) over about a third of the int8 range."""
    return float(in_scale * w_scale * 74 * 73 * np.sqrt(depth) / 40)


def rand8(rng, shape, lo=-128):
    return rng.integers(lo, 128, shape).astype(np.int8)


def conv_model(rng, *, depthwise=False, mult=1, hw=(9, 8), cin=3, cout=5, k=(3, 3), padding=SAME,
               stride=(1, 1), dilation=(1, 1), act=ACT.NONE, per_channel=True, bias=True, float_model=False):
    n_out = cin * mult if depthwise else cout
    oh = out_size(hw[0], k[0], stride[0], dilation[0], padding)
    ow = out_size(hw[1], k[1], stride[1], dilation[1], padding)
    wshape = (1, *k, n_out) if depthwise else (n_out, *k, cin)
    opts = conv_options(padding, stride, dilation, act, mult if depthwise else None)
    code = OP.DEPTHWISE_CONV_2D if depthwise else OP.CONV_2D
    depth = k[0] * k[1] * (1 if depthwise else cin)
    if float_model:
        x, y = actf((1, *hw, cin), "x"), actf((1, oh, ow, n_out), "y")
        w = const(rng.normal(size=wshape).astype(np.float32))
        b = const(rng.normal(size=n_out).astype(np.float32), name="b") if bias else None
    else:
        in_s, in_zp = 0.05, int(rng.integers(-20, 20))
        w_s = rng.uniform(0.5, 2.0, n_out if per_channel else 1) / 127
        x = act8((1, *hw, cin), in_s, in_zp, "x")
        y = act8((1, oh, ow, n_out), out_scale(in_s, w_s.mean(), depth), int(rng.integers(-10, 10)), "y")
        w = const(rand8(rng, wshape, -127), w_s, (3 if depthwise else 0) if per_channel else None)
        b = const(rng.integers(-3000, 3000, n_out).astype(np.int32), in_s * w_s, 0, "b") if bias else None
    ins = [x, w] + ([b] if bias else [])
    return model_bytes([operator(code, ins, [y], *opts)], [x], [y])


def dense_model(rng, *, n_in=24, n_out=7, in_shape=None, act=ACT.NONE, per_channel=False, bias=True,
                float_model=False):
    in_shape = in_shape or (1, n_in)
    batch = int(np.prod(in_shape)) // n_in
    o = fb.FullyConnectedOptionsT()
    o.fusedActivationFunction = act
    opts = (o, fb.BuiltinOptions.FullyConnectedOptions)
    if float_model:
        x, y = actf(in_shape, "x"), actf((batch, n_out), "y")
        w = const(rng.normal(size=(n_out, n_in)).astype(np.float32))
        b = const(rng.normal(size=n_out).astype(np.float32), name="b") if bias else None
    else:
        in_s, w_s = 0.1, rng.uniform(0.5, 2.0, n_out if per_channel else 1) / 127
        x = act8(in_shape, in_s, int(rng.integers(-20, 20)), "x")
        y = act8((batch, n_out), out_scale(in_s, w_s.mean(), n_in), int(rng.integers(-10, 10)), "y")
        w = const(rand8(rng, (n_out, n_in), -127), w_s, 0 if per_channel else None)
        b = const(rng.integers(-3000, 3000, n_out).astype(np.int32), in_s * w_s, 0, "b") if bias else None
    ins = [x, w] + ([b] if bias else [])
    return model_bytes([operator(OP.FULLY_CONNECTED, ins, [y], *opts)], [x], [y])


def pool_model(rng, *, hw=(7, 9), c=4, window=(3, 2), stride=(2, 2), padding=SAME, act=ACT.NONE,
               float_model=False):
    o = fb.Pool2DOptionsT()
    o.padding, (o.strideH, o.strideW), (o.filterHeight, o.filterWidth) = padding, stride, window
    o.fusedActivationFunction = act
    oh = out_size(hw[0], window[0], stride[0], 1, padding)
    ow = out_size(hw[1], window[1], stride[1], 1, padding)
    if float_model:
        x, y = actf((1, *hw, c), "x"), actf((1, oh, ow, c), "y")
    else:
        zp = int(rng.integers(-20, 20))
        x, y = act8((1, *hw, c), 0.1, zp, "x"), act8((1, oh, ow, c), 0.1, zp, "y")
    return model_bytes([operator(OP.AVERAGE_POOL_2D, [x], [y], o, fb.BuiltinOptions.Pool2DOptions)], [x], [y])


def add_model(rng, *, shape=(1, 5, 6, 3), scales=(0.05, 0.11, 0.13), act=ACT.NONE, float_model=False):
    o = fb.AddOptionsT()
    o.fusedActivationFunction = act
    if float_model:
        a, b, y = actf(shape, "a"), actf(shape, "b"), actf(shape, "y")
    else:
        a, b, y = (act8(shape, s, int(rng.integers(-30, 30)), n) for s, n in zip(scales, "aby"))
    return model_bytes([operator(OP.ADD, [a, b], [y], o, fb.BuiltinOptions.AddOptions)], [a, b], [y])


def softmax_model(rng, *, shape=(3, 10), in_scale=0.08, beta=1.0, float_model=False):
    o = fb.SoftmaxOptionsT()
    o.beta = beta
    if float_model:
        x, y = actf(shape, "x"), actf(shape, "y")
    else:
        x, y = act8(shape, in_scale, int(rng.integers(-20, 20)), "x"), act8(shape, 1 / 256, -128, "y")
    return model_bytes([operator(OP.SOFTMAX, [x], [y], o, fb.BuiltinOptions.SoftmaxOptions)], [x], [y])


def reshape_pool_model(rng):
    """AVERAGE_POOL_2D -> RESHAPE -> FULLY_CONNECTED -> SOFTMAX: the classifiers' tail."""
    x, p = act8((1, 4, 5, 8), 0.1, 3, "x"), act8((1, 1, 1, 8), 0.1, 3, "p")
    r, y = act8((1, 8), 0.1, 3, "r"), act8((1, 6), 0.2, -4, "y")
    s = act8((1, 6), 1 / 256, -128, "s")
    po = fb.Pool2DOptionsT()
    po.padding, po.strideH, po.strideW, po.filterHeight, po.filterWidth = VALID, 4, 5, 4, 5
    shape = const(np.array([1, 8], np.int32), name="shape")
    w = const(rand8(rng, (6, 8), -127), 0.01)
    b = const(rng.integers(-500, 500, 6).astype(np.int32), 0.001, None, "b")
    fo, so = fb.FullyConnectedOptionsT(), fb.SoftmaxOptionsT()
    so.beta = 1.0
    ops = [operator(OP.AVERAGE_POOL_2D, [x], [p], po, fb.BuiltinOptions.Pool2DOptions),
           operator(OP.RESHAPE, [p, shape], [r]),
           operator(OP.FULLY_CONNECTED, [r, w, b], [y], fo, fb.BuiltinOptions.FullyConnectedOptions),
           operator(OP.SOFTMAX, [y], [s], so, fb.BuiltinOptions.SoftmaxOptions)]
    return model_bytes(ops, [x], [s])


# ---------------------------------------------------------------- comparing

def transpose_conv_model(rng, *, hw=(5, 4), cin=3, cout=5, k=(3, 3), padding=SAME, stride=(2, 2), act=ACT.NONE,
                         bias=True, float_model=True, per_channel=True):
    """A TRANSPOSE_CONV: inputs output shape, OHWI filter, input, bias."""
    oh, ow = (hw[0] * stride[0], hw[1] * stride[1]) if padding == SAME else \
        ((hw[0] - 1) * stride[0] + k[0], (hw[1] - 1) * stride[1] + k[1])
    shape = const(np.array([1, oh, ow, cout], np.int32), name="shape")
    if float_model:
        x, y = actf((1, *hw, cin), "x"), actf((1, oh, ow, cout), "y")
        w = const(rng.normal(size=(cout, *k, cin)).astype(np.float32))
        b = const(rng.normal(size=cout).astype(np.float32), name="b")
    else:
        in_s, in_zp = 0.05, int(rng.integers(-20, 20))
        w_s = rng.uniform(0.5, 2.0, cout if per_channel else 1) / 127
        # each output sums about k*k*cin / stride^2 products
        depth = max(k[0] * k[1] * cin // (stride[0] * stride[1]), 1)
        x = act8((1, *hw, cin), in_s, in_zp, "x")
        y = act8((1, oh, ow, cout), out_scale(in_s, w_s.mean(), depth), int(rng.integers(-10, 10)), "y")
        w = const(rand8(rng, (cout, *k, cin), -127), w_s, 0 if per_channel else None)
        b = const(rng.integers(-3000, 3000, cout).astype(np.int32), in_s * w_s, 0, "b")
    o = fb.TransposeConvOptionsT()
    o.padding, (o.strideH, o.strideW), o.fusedActivationFunction = padding, stride, act
    ins = [shape, w, x] + ([b] if bias else [])
    return model_bytes([operator(OP.TRANSPOSE_CONV, ins, [y], o, fb.BuiltinOptions.TransposeConvOptions)], [x], [y])


def inputs_for(model, rng, n=3):
    """n input sets: uniform int8 or int16 (or N(0, 2) float) data."""
    sets = []
    for _ in range(n):
        sets.append(tuple(rng.normal(0, 2, s.shape).astype(np.float32) if s.quant is None else
                          rng.integers(-32768, 32768, s.shape).astype(np.int16) if s.dtype == "int16" else
                          rand8(rng, s.shape) for s in model.inputs))
    return sets


def check(data: bytes, tmp_path, seed=0, n=3):
    """The reader's function against TFLite Micro on n random inputs; returns the outputs."""
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    model = read_tflite(path)
    sets = inputs_for(model, np.random.default_rng(seed), n)
    # all n at once, compiled once: eager JAX would compile each small op of the blocks on its own
    batched = jax.jit(jax.vmap(lambda *xs: model(*xs)))(*[np.stack(xs) for xs in zip(*sets)])
    batched = batched if isinstance(batched, tuple) else (batched,)
    tflm = Tflm(data)
    for k, xs in enumerate(sets):
        want, _ = tflm.run(xs, len(model.outputs))
        for g, w in zip((np.asarray(b[k]) for b in batched), want):
            assert g.dtype == w.dtype and g.shape == w.shape
            if g.dtype.kind == "i":
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * np.abs(w).max())
    return np.concatenate([np.asarray(b).ravel() for b in batched])


def spread(out: np.ndarray) -> int:
    """Distinct int8 values inside the clamp: a case must exercise the arithmetic, not the clamp."""
    return len(np.unique(out[(out > -128) & (out < 127)]))


# ---------------------------------------------------------------- one op, one option at a time

CONV_CASES = {
    "same": dict(),
    "valid_stride2": dict(padding=VALID, stride=(2, 2)),
    "same_stride_2x1_odd": dict(hw=(10, 7), stride=(2, 1), k=(4, 3)),
    "dilation": dict(dilation=(2, 3), padding=SAME),
    "dilation_valid": dict(dilation=(2, 1), padding=VALID, hw=(11, 8)),
    "relu": dict(act=ACT.RELU),
    "relu6": dict(act=ACT.RELU6),
    "relu_n1_to_1": dict(act=ACT.RELU_N1_TO_1),
    "per_tensor": dict(per_channel=False),
    "no_bias": dict(bias=False),
    "pointwise": dict(k=(1, 1), cin=16, cout=8),
}


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_2d(case, tmp_path):
    out = check(conv_model(np.random.default_rng(1), **CONV_CASES[case]), tmp_path)
    assert spread(out) >= (3 if "relu" in case else 20)


DEPTHWISE_CASES = {
    "same": dict(cin=6),
    "multiplier2": dict(cin=3, mult=2),
    "valid_stride2": dict(cin=4, padding=VALID, stride=(2, 2)),
    "dilation": dict(cin=4, dilation=(2, 2)),
    "relu6": dict(cin=5, act=ACT.RELU6),
    "per_tensor": dict(cin=4, per_channel=False),
    "no_bias": dict(cin=4, bias=False),
}


@pytest.mark.parametrize("case", DEPTHWISE_CASES)
def test_depthwise_conv_2d(case, tmp_path):
    out = check(conv_model(np.random.default_rng(2), depthwise=True, **DEPTHWISE_CASES[case]), tmp_path)
    assert spread(out) >= (3 if "relu" in case else 20)


DENSE_CASES = {
    "per_tensor": dict(),
    "per_channel": dict(per_channel=True),
    "no_bias": dict(bias=False),
    "relu": dict(act=ACT.RELU),
    "batch_from_4d_input": dict(in_shape=(2, 3, 2, 12), n_in=12),
}


@pytest.mark.parametrize("case", DENSE_CASES)
def test_fully_connected(case, tmp_path):
    assert spread(check(dense_model(np.random.default_rng(3), **DENSE_CASES[case]), tmp_path)) >= 3


@pytest.mark.parametrize("kw", [dict(), dict(padding=VALID, stride=(1, 2)), dict(act=ACT.RELU),
                                dict(hw=(5, 5), window=(5, 5), stride=(5, 5), padding=VALID)],
                         ids=["same", "valid", "relu", "global"])
def test_average_pool_2d(kw, tmp_path):
    check(pool_model(np.random.default_rng(4), **kw), tmp_path)


@pytest.mark.parametrize("kw", [dict(), dict(act=ACT.RELU), dict(scales=(0.2, 0.03, 0.1))],
                         ids=["plain", "relu", "other_scales"])
def test_add(kw, tmp_path):
    assert spread(check(add_model(np.random.default_rng(5), **kw), tmp_path)) >= 20


@pytest.mark.parametrize("kw", [dict(), dict(beta=0.5), dict(in_scale=0.02, shape=(2, 1, 33))],
                         ids=["beta1", "beta0.5", "wide_rows"])
def test_softmax(kw, tmp_path):
    assert spread(check(softmax_model(np.random.default_rng(6), **kw), tmp_path)) >= 5


def test_reshape_and_the_classifier_tail(tmp_path):
    check(reshape_pool_model(np.random.default_rng(7)), tmp_path)


@pytest.mark.parametrize("name, build", [
    ("conv", lambda r: conv_model(r, float_model=True, act=ACT.RELU6, stride=(2, 1))),
    ("conv_dilated", lambda r: conv_model(r, float_model=True, dilation=(2, 2), padding=VALID)),
    ("depthwise", lambda r: conv_model(r, float_model=True, depthwise=True, cin=3, mult=2, act=ACT.RELU)),
    ("dense", lambda r: dense_model(r, float_model=True, act=ACT.RELU)),
    ("pool", lambda r: pool_model(r, float_model=True)),
    ("add", lambda r: add_model(r, float_model=True, act=ACT.RELU_N1_TO_1)),
    ("softmax", lambda r: softmax_model(r, float_model=True, beta=0.7)),
])
def test_float_ops(name, build, tmp_path):
    check(build(np.random.default_rng(8)), tmp_path)


TRANSPOSE_CONV_CASES = {
    "same_stride2": dict(),
    "valid_stride2_k4_odd_channels": dict(padding=VALID, k=(4, 4), cin=5, cout=7),
    "same_stride_2x1_k4x3": dict(stride=(2, 1), k=(4, 3), hw=(4, 6)),
    "same_stride3_k2": dict(stride=(3, 3), k=(2, 2)),
    "no_bias": dict(bias=False),
    "relu": dict(act=ACT.RELU),
}


@pytest.mark.parametrize("case", TRANSPOSE_CONV_CASES)
def test_float_transpose_conv(case, tmp_path):
    check(transpose_conv_model(np.random.default_rng(10), **TRANSPOSE_CONV_CASES[case]), tmp_path)


INT8_TRANSPOSE_CONV_CASES = {
    "same_stride2": dict(),
    "valid_stride2_k4_odd_channels": dict(padding=VALID, k=(4, 4), cin=5, cout=7),
    "same_stride_2x1_k4x3": dict(stride=(2, 1), k=(4, 3), hw=(4, 6)),
    "same_stride3_k2": dict(stride=(3, 3), k=(2, 2)),
    "stride1_same": dict(stride=(1, 1), hw=(6, 5)),
    "no_bias": dict(bias=False),
    "relu": dict(act=ACT.RELU),
    "per_tensor": dict(per_channel=False),
}


@pytest.mark.parametrize("case", INT8_TRANSPOSE_CONV_CASES)
def test_int8_transpose_conv(case, tmp_path):
    out = check(transpose_conv_model(np.random.default_rng(11), float_model=False, **INT8_TRANSPOSE_CONV_CASES[case]),
                tmp_path)
    assert spread(out) >= (3 if "relu" in case else 20)


def test_multipliers_flush_and_saturate_as_tflite_does():
    """TFLite's QuantizeMultiplier: below 2**-32 the multiplier is zero; from 2**30 on it
    saturates (quantize() refuses such a scale; a file may carry one)."""
    assert tflite_multiplier(2.0 ** -40) == (0, 0)
    assert tflite_multiplier(0.75) == (3 << 29, 0)
    assert tflite_multiplier(2.0 ** 31) == ((1 << 31) - 1, 30)
    assert tflite_multiplier((1 << 30) - 1e-6) == ((1 << 31) - 1, 30)  # rounds up to 2**30


def conv_block(dilation):
    return ConvParams(input_dims=(1, 6, 6, 2), filter_dims=(3, 3, 3, 2), output_dims=(1, 2, 4, 3), stride=(1, 1),
                      padding=((0, 0), (0, 0)), input_offset=0, output_offset=0, activation=(-128, 127),
                      multipliers=(1 << 30,), shifts=(0,), dilation=dilation)


def test_a_dilated_block_stays_xlas_code_in_capture():
    p = conv_block(dilation=(2, 1))
    assert calls.unsupported(p) == "dilation (capture's s8 calls pass CMSIS-NN a dilation of 1)"
    assert calls.unsupported(conv_block(dilation=(1, 1))) is None
    # an int16 block's call takes its dilation (test_tflite_16x8's network: a dilated depthwise on QEMU)
    from dataclasses import replace
    assert calls.unsupported(replace(p, activation=(-32768, 32767), activation_bits=16)) is None


def test_the_function_is_what_capture_takes(tmp_path):
    """model.fn as capture's worker calls it: its parameters are the inputs, then the weights,
    every one given by example_inputs or weights as a 32-bit array, and jit-compiled it computes
    what TFLite Micro computes."""
    path = tmp_path / "tail.tflite"
    path.write_bytes(reshape_pool_model(np.random.default_rng(7)))
    model = read_tflite(path)
    fn = model.fn
    params = list(inspect.signature(fn).parameters)
    assert fn.__name__ == "tail" and params == ["x", "w2", "b2"]
    args = [fn.example_inputs[p] if p in fn.example_inputs else fn.weights[p] for p in params]
    assert [a.dtype for a in args] == [np.int8, np.int8, np.int32]
    got = jax.jit(fn, keep_unused=True)(*args)
    (want,), _ = Tflm(path.read_bytes()).run(model.example_inputs, 1)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- refused, in one line

def test_an_unsupported_op_is_refused_by_name_and_index(tmp_path):
    x, h, y = act8((1, 8), 0.1, 0, "x"), act8((1, 8), 0.1, 0, "h"), act8((1, 8), 0.1, 0, "y")
    o = fb.AddOptionsT()
    ops = [operator(OP.ADD, [x, x], [h], o, fb.BuiltinOptions.AddOptions),
           operator(OP.DIV, [h, h], [y], fb.DivOptionsT(), fb.BuiltinOptions.DivOptions)]
    path = tmp_path / "div.tflite"
    path.write_bytes(model_bytes(ops, [x], [y]))
    with pytest.raises(UserError) as e:
        read_tflite(path)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == ("div.tflite: operator 1 (DIV): not supported (the reader supports CONV_2D, DEPTHWISE_CONV_2D, "
                   "FULLY_CONNECTED, AVERAGE_POOL_2D, MAX_POOL_2D, ADD, MUL, SUB, SOFTMAX, RESHAPE, TRANSPOSE_CONV, PAD, PADV2, "
                   "CONCATENATION, TRANSPOSE, RESIZE_NEAREST_NEIGHBOR, MEAN, LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, SVDF, "
                   "UNIDIRECTIONAL_SEQUENCE_LSTM)"), msg


def grouped_conv(rng):
    """A CONV_2D whose filter sees half the input channels (TFLite's grouped convolution)."""
    x, y = act8((1, 5, 5, 4), 0.1, 0, "x"), act8((1, 5, 5, 6), 0.5, 0, "y")
    w = const(rand8(rng, (6, 3, 3, 2), -127), [0.01] * 6, 0)
    return model_bytes([operator(OP.CONV_2D, [x, w], [y], *conv_options())], [x], [y])


def hybrid_conv(rng):
    """Float activations with int8 weights: TFLite's hybrid quantization (the KWS float file)."""
    x, y = actf((1, 5, 5, 2), "x"), actf((1, 5, 5, 3), "y")
    w = const(rand8(rng, (3, 3, 3, 2), -127), 0.01)
    return model_bytes([operator(OP.CONV_2D, [x, w], [y], *conv_options())], [x], [y])


def broadcast_add(rng):
    a, b, y = act8((1, 4, 3), 0.1, 0, "a"), act8((1, 1, 3), 0.1, 0, "b"), act8((1, 4, 3), 0.2, 0, "y")
    o = fb.AddOptionsT()
    return model_bytes([operator(OP.ADD, [a, b], [y], o, fb.BuiltinOptions.AddOptions)], [a, b], [y])


def shuffled_dense(rng):
    data = dense_model(rng)
    m = me.read(data)
    m.subgraphs[0].operators[0]._fb.builtinOptions.weightsFormat = fb.FullyConnectedOptionsWeightsFormat.SHUFFLED4x16INT8
    m.subgraphs[0].operators[0].opcode = OP.FULLY_CONNECTED
    return bytes(m.build())


REFUSED = {  # model -> the one line
    "tanh": (lambda r: conv_model(r, act=ACT.TANH),
             "m.tflite: operator 0 (CONV_2D): fused activation TANH is not supported"),
    "grouped": (grouped_conv, "m.tflite: operator 0 (CONV_2D): grouped convolution (input (1, 5, 5, 4), "
                              "filter (6, 3, 3, 2)) is not supported"),
    "hybrid": (hybrid_conv, "m.tflite: operator 0 (CONV_2D): int8 weights (tensor 1) with a float32 input "
                            "(hybrid quantization) are not supported"),
    "broadcast": (broadcast_add, "m.tflite: operator 0 (ADD): broadcasting (1, 4, 3) + (1, 1, 3) is not supported"),
    "shuffled": (shuffled_dense, "m.tflite: operator 0 (FULLY_CONNECTED): weights format 1 "
                                 "(only DEFAULT is supported)"),
}


def test_a_file_that_is_not_tflite_is_refused_in_one_line(tmp_path):
    path = tmp_path / "model.tflite"
    path.write_bytes(b"not a flatbuffer at all")
    with pytest.raises(UserError) as e:
        read_tflite(path)
    assert str(e.value) == "model.tflite: not a TFLite flatbuffer (no 'TFL3' file identifier)"


def test_a_damaged_file_is_one_line_never_a_crash(tmp_path):
    """Bytes flipped at random in a real graph (tables, offsets, shapes, scales, weights): the
    reader reads it or refuses it in one line (UserError), never another exception."""
    import random

    data = conv_model(np.random.default_rng(3), per_channel=True)
    path, outcomes = tmp_path / "damaged.tflite", {"read": 0, "refused": 0}
    for seed in range(150):
        r, d = random.Random(seed), bytearray(data)
        for _ in range(r.choice([1, 3, 10, 40])):
            d[r.randrange(8, len(d))] = r.randrange(256)
        path.write_bytes(bytes(d))
        try:
            read_tflite(path)
            outcomes["read"] += 1
        except UserError as e:
            assert "\n" not in str(e) and str(e).startswith("damaged.tflite"), str(e)
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0  # the flips did reach the structure


@pytest.mark.parametrize("case", REFUSED)
def test_an_unsupported_option_is_refused_in_one_line(case, tmp_path):
    build, line = REFUSED[case]
    path = tmp_path / "m.tflite"
    path.write_bytes(build(np.random.default_rng(10)))
    with pytest.raises(UserError) as e:
        read_tflite(path)
    assert str(e.value) == line


# ---------------------------------------------------------------- the MLPerf Tiny reference models

needs_mlperf = pytest.mark.skipif(not MLPERF.is_dir(), reason=f"the MLPerf Tiny models are not at {MLPERF} "
                                  "(shared/models/mlperf_tiny beside the checkout)")
INT8_MODELS = {"kws_ref_model.tflite": 13, "pretrainedResnet_quant.tflite": 16, "vww_96_int8.tflite": 31,
               "ad01_int8.tflite": 10}  # file -> operators
FLOAT_MODELS = ["pretrainedResnet.tflite", "vww_96_float.tflite", "ad01_fp32.tflite"]


def mlperf_inputs(spec, n=20) -> np.ndarray:
    """n int8 inputs of four kinds: uniform noise (saturates the classifiers' softmax), the zero
    point with a spread of 4 or 16 (mostly does not), and smooth low-frequency patterns."""
    rng = np.random.default_rng(11)
    zp, shape = spec.quant.zero_point, spec.shape
    grids = np.meshgrid(*[np.arange(s) for s in shape], indexing="ij")[1:]
    xs = []
    for k in range(n):
        kind = k % 4
        if kind == 0:
            x = rng.integers(-128, 128, shape)
        elif kind in (1, 2):
            x = rng.normal(zp, 4 if kind == 1 else 16, shape)
        else:
            x = zp + 30 * sum(np.cos(rng.uniform(0, 0.5) * g + rng.uniform(0, 2 * np.pi)) for g in grids)
        xs.append(np.clip(np.round(x), -128, 127).astype(np.int8))
    return np.stack(xs)


def compare_layers(model, data: bytes, xs, exact: bool) -> tuple[dict, list]:
    """Every layer's output, ours against TFLite Micro's, on each input: the layers that differ
    (op -> (name, inputs that differ, max abs diff)) and TFLite Micro's final outputs."""
    with blocks.values_only():  # values only: each int8 matrix product one dot, compiled at once
        ours = jax.jit(jax.vmap(model.tensors))(xs)
    tflm = Tflm(data)
    wrong, finals = {}, []
    for k, x in enumerate(xs):
        (out,), want = tflm.run([x], 1, [layer.output for layer in model.layers])
        finals.append(out)
        for layer in model.layers:
            g, w = np.asarray(ours[layer.output][k]), want[layer.output]
            assert g.shape == w.shape and g.dtype == w.dtype, (layer.op, layer.name, g.shape, w.shape)
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64)).max()
            bad = diff > 0 if exact else diff > 1e-4 * max(np.abs(w).max(), 1e-6)
            if bad:
                name, n, worst = wrong.get(layer.op, (layer.name, 0, 0.0))
                wrong[layer.op] = (name, n + 1, max(worst, diff))
    return wrong, finals


@needs_mlperf
@pytest.mark.parametrize("name", INT8_MODELS)
def test_mlperf_tiny_int8_every_layer_bit_exact(name):
    model = read_tflite(MLPERF / name)
    xs = mlperf_inputs(model.inputs[0], 8)
    wrong, finals = compare_layers(model, (MLPERF / name).read_bytes(), xs, exact=True)
    assert not wrong, f"{name}: layers not bit-exact (op: name, inputs, max abs diff): {wrong}"
    assert len(model.layers) == INT8_MODELS[name]
    # some inputs leave the output off the clamp, so a right answer is not a saturated one
    inside = [int(np.sum((f > -128) & (f < 127))) for f in finals]
    assert sum(n >= 2 for n in inside) >= 3, inside
    # and so does the model's own example input
    (out,), _ = Tflm((MLPERF / name).read_bytes()).run(model.example_inputs, 1)
    assert np.sum((out > -128) & (out < 127)) >= 2, out


@needs_mlperf
@pytest.mark.parametrize("name", FLOAT_MODELS)
def test_mlperf_tiny_float_every_layer_close(name):
    model = read_tflite(MLPERF / name)
    xs = np.random.default_rng(12).normal(size=(5, *model.inputs[0].shape)).astype(np.float32)
    wrong, _ = compare_layers(model, (MLPERF / name).read_bytes(), xs, exact=False)
    assert not wrong, f"{name}: layers off by more than 1e-4 relative (op: name, inputs, max abs diff): {wrong}"


@needs_mlperf
def test_mlperf_tiny_hybrid_float_kws_is_refused():
    """The KWS float file keeps int8 conv weights under float activations; TFLite Micro refuses it
    too ("Hybrid models are not supported")."""
    with pytest.raises(UserError) as e:
        read_tflite(MLPERF / "kws_ref_model_float32.tflite")
    assert str(e.value) == ("kws_ref_model_float32.tflite: operator 0 (CONV_2D): int8 weights (tensor 17) with a "
                            "float32 input (hybrid quantization) are not supported")


@needs_mlperf
def test_the_kept_tensors_are_what_each_layer_outputs():
    """The per-layer oracle is sound: the tensors TFLite Micro keeps (kPreserveAllTensors) equal
    the outputs of a copy of the model, written with its model writer, in which every layer's
    output is a model output (ResNet-8: branches and residual adds)."""
    data = (MLPERF / "pretrainedResnet_quant.tflite").read_bytes()
    model = read_tflite(MLPERF / "pretrainedResnet_quant.tflite")
    copy = me.read(data)
    sg = copy.subgraphs[0]
    sg.outputs = [sg.tensors[layer.output] for layer in model.layers]
    every = runtime.Interpreter.from_bytes(bytes(copy.build()), arena_size=ARENA)
    x = mlperf_inputs(model.inputs[0], 2)[1]
    every.set_input(x, 0)
    every.invoke()
    _, kept = Tflm(data).run([x], 1, [layer.output for layer in model.layers])
    for i, layer in enumerate(model.layers):
        np.testing.assert_array_equal(every.get_output(i), kept[layer.output], err_msg=f"operator {layer.op}")
