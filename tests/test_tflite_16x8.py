"""TFLite's 16x8 files (int16 activations with zero point 0, int8 weights, INT64 biases: what the
converter writes for EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8) read into the
int16 blocks (quantize(activation_bits=16)'s), which capture lowers onto CMSIS-NN's s16
functions. Each op on the host against TFLite Micro's reference kernels, int16 value for value,
over odd shapes, padding, stride 2, a depthwise multiplier of 2, fused relu; a network of them in
every variant on QEMU, bit-exact with TFLite Micro; what the reader refuses."""

from __future__ import annotations

import re

import numpy as np
import pytest
from every_variant import every_variant_passes
from test_tflite_import import (ACT, OP, SAME, VALID, check, conv_options, fb, me, model_bytes, operator, out_size)

from specializer.capture import imported
from specializer.capture.capture import capture
from specializer.errors import UserError
from specializer.importers.tflite import read_tflite
from specializer.report import macs


def act16(shape, scale, name="t", zero_point=0):
    return me.Tensor(shape=shape, dtype=fb.TensorType.INT16, quantization=me.Quantization(float(scale), zero_point),
                     name=name)


def filter8(rng, shape, scales, axis, name):
    scales = [float(s) for s in np.atleast_1d(scales)]
    return me.Tensor(shape=shape, dtype=fb.TensorType.INT8, data=rng.integers(-127, 128, shape).astype(np.int8),
                     quantization=me.Quantization(scales, [0] * len(scales), axis), name=name)


def bias(rng, n, scales, name, dtype=fb.TensorType.INT64):
    np_type = np.int64 if dtype == fb.TensorType.INT64 else np.int32
    return me.Tensor(shape=(n,), dtype=dtype, data=rng.integers(-400000, 400000, n).astype(np_type), name=name,
                     quantization=me.Quantization([float(s) for s in np.broadcast_to(scales, n)], [0] * n, 0))


def spread16(depth: int, in_s: float, w_s: float) -> float:
    """An output scale that spreads the accumulator of uniform int16 x int8 data (about 18900 *
    73 * sqrt(depth)) over about a third of int16."""
    return float(in_s * w_s * 18900 * 73 * np.sqrt(depth) / 11000)


def conv_layer(rng, x, in_s, hw, cin, *, depthwise=False, mult=1, cout=5, k=(3, 3), stride=(1, 1), padding=SAME,
               dilation=(1, 1), act=ACT.NONE, per_channel=True, bias_type=fb.TensorType.INT64, with_bias=True,
               quantized_bias_type=None, name="c"):
    """(op, output tensor, its scale, its spatial size) of a 16x8 conv or depthwise;
    quantized_bias_type: the options' field (what TFLite Micro sums a bias-less layer in)."""
    n_out = cin * mult if depthwise else cout
    oh, ow = (out_size(hw[i], k[i], stride[i], dilation[i], padding) for i in range(2))
    w_s = rng.uniform(0.5, 2.0, n_out if per_channel else 1) / 127
    y_s = spread16(k[0] * k[1] * (1 if depthwise else cin), in_s, w_s.mean())
    y = act16((1, oh, ow, n_out), y_s, f"{name}_y")
    w = filter8(rng, (1, *k, n_out) if depthwise else (n_out, *k, cin), w_s,
                (3 if depthwise else 0) if per_channel else None, f"{name}_w")
    b = [bias(rng, n_out, in_s * w_s, f"{name}_b", bias_type)] if with_bias else []
    opts = conv_options(padding, stride, dilation, act, mult if depthwise else None)
    if quantized_bias_type is not None:
        opts[0].quantizedBiasType = quantized_bias_type
    code = OP.DEPTHWISE_CONV_2D if depthwise else OP.CONV_2D
    return operator(code, [x, w, *b], [y], *opts), y, y_s, (oh, ow)


def dense_layer(rng, x, in_s, n_in, n_out=7, per_channel=False, batch=1, act=ACT.NONE, name="d",
                bias_type=fb.TensorType.INT64):
    w_s = rng.uniform(0.5, 2.0, n_out if per_channel else 1) / 127
    y_s = spread16(n_in, in_s, w_s.mean())
    y = act16((batch, n_out), y_s, f"{name}_y")
    w = filter8(rng, (n_out, n_in), w_s, 0 if per_channel else None, f"{name}_w")
    b = bias(rng, n_out, [float(np.float32(in_s) * np.float32(s)) for s in w_s], f"{name}_b", bias_type)
    o = fb.FullyConnectedOptionsT()
    o.fusedActivationFunction = act
    return operator(OP.FULLY_CONNECTED, [x, w, b], [y], o, fb.BuiltinOptions.FullyConnectedOptions), y, y_s


def pool_layer(x, s, hw, c, *, kind=OP.MAX_POOL_2D, window=(2, 2), stride=(2, 2), padding=SAME, name="p"):
    o = fb.Pool2DOptionsT()
    o.padding, (o.strideH, o.strideW), (o.filterHeight, o.filterWidth) = padding, stride, window
    oh, ow = (out_size(hw[i], window[i], stride[i], 1, padding) for i in range(2))
    y = act16((1, oh, ow, c), s, f"{name}_y")
    return operator(kind, [x], [y], o, fb.BuiltinOptions.Pool2DOptions), y, (oh, ow)


def add_layer(a, b, shape, out_s, act=ACT.NONE, name="a", sub=False):
    o = fb.SubOptionsT() if sub else fb.AddOptionsT()
    o.fusedActivationFunction = act
    y = act16(shape, out_s, f"{name}_y")
    if sub:
        return operator(OP.SUB, [a, b], [y], o, fb.BuiltinOptions.SubOptions), y
    return operator(OP.ADD, [a, b], [y], o, fb.BuiltinOptions.AddOptions), y


def mul_layer(a, b, shape, out_s, act=ACT.NONE, name="m"):
    o = fb.MulOptionsT()
    o.fusedActivationFunction = act
    y = act16(shape, out_s, f"{name}_y")
    return operator(OP.MUL, [a, b], [y], o, fb.BuiltinOptions.MulOptions), y


def one_op(kind, seed=0, **kw) -> bytes:
    rng = np.random.default_rng(seed)
    hw, cin, in_s = kw.pop("hw", (9, 8)), kw.pop("cin", 3), 0.002
    if kind == "dense":
        n_in = kw.pop("n_in", 24)
        x = act16((kw.get("batch", 1), n_in), in_s, "x")
        op, y, _ = dense_layer(rng, x, in_s, n_in, **kw)
        return model_bytes([op], [x], [y])
    x = act16((1, *hw, cin), in_s, "x")
    if kind in ("max_pool", "avg_pool"):
        op, y, _ = pool_layer(x, in_s, hw, cin, kind=OP.MAX_POOL_2D if kind == "max_pool" else OP.AVERAGE_POOL_2D,
                              **kw)
        return model_bytes([op], [x], [y])
    if kind in ("add", "sub"):
        b = act16((1, *hw, cin), in_s * 1.7, "b")
        op, y = add_layer(x, b, (1, *hw, cin), in_s * 2.1, sub=kind == "sub", **kw)
        return model_bytes([op], [x, b], [y])
    if kind == "mul":  # the product of two int16 spread over about half of int16
        const = kw.pop("const", False)
        b = act16((1, *hw, cin), in_s * 1.7, "b") if not const else me.Tensor(
            shape=(1, *hw, cin), dtype=fb.TensorType.INT16, name="b", quantization=me.Quantization(in_s * 1.7, 0),
            data=rng.integers(-32768, 32768, (1, *hw, cin)).astype(np.int16))  # a constant factor: a weight
        op, y = mul_layer(x, b, (1, *hw, cin), in_s * in_s * 1.7 * 2 ** 30 / 16000, **kw)
        return model_bytes([op], [x] if const else [x, b], [y])
    op, y, _, _ = conv_layer(rng, x, in_s, hw, cin, depthwise=kind == "depthwise", **kw)
    return model_bytes([op], [x], [y])


CASES = {
    "conv": ("conv", dict()),
    "conv_valid_stride2_per_tensor": ("conv", dict(padding=VALID, stride=(2, 2), per_channel=False)),
    "conv_1x1_odd_relu": ("conv", dict(k=(1, 1), cin=7, cout=9, act=ACT.RELU)),
    "depthwise": ("depthwise", dict(cin=6)),
    "depthwise_multiplier2": ("depthwise", dict(cin=3, mult=2)),
    "depthwise_stride2_relu": ("depthwise", dict(cin=5, stride=(2, 2), act=ACT.RELU)),
    "conv_dilated_no_bias_relu6": ("conv", dict(dilation=(2, 1), with_bias=False, act=ACT.RELU6)),
    "depthwise_dilated_relu_n1_to_1": ("depthwise", dict(cin=4, dilation=(1, 2), act=ACT.RELU_N1_TO_1)),
    "dense": ("dense", dict()),
    "dense_odd": ("dense", dict(n_in=25, n_out=9)),
    "dense_per_channel_batch2": ("dense", dict(per_channel=True, batch=2)),
    "max_pool": ("max_pool", dict(cin=5, window=(3, 2))),
    "avg_pool": ("avg_pool", dict(cin=6, window=(3, 3), stride=(2, 1))),
    "add": ("add", dict(cin=5)),
    "add_relu": ("add", dict(cin=4, act=ACT.RELU)),
    "sub": ("sub", dict(cin=5)),
    "sub_relu": ("sub", dict(cin=4, act=ACT.RELU)),
    "mul": ("mul", dict(cin=5)),
    "mul_relu": ("mul", dict(cin=4, act=ACT.RELU)),
    "mul_constant_factor": ("mul", dict(cin=3, const=True)),
    # INT32 biases: TFLite Micro sums in int32 and requantizes as for int8
    "conv_int32_bias": ("conv", dict(bias_type=fb.TensorType.INT32)),
    "conv_1x1_int32_bias_relu": ("conv", dict(k=(1, 1), cin=7, cout=9, act=ACT.RELU, bias_type=fb.TensorType.INT32)),
    "conv_no_bias_int32_sums": ("conv", dict(with_bias=False, quantized_bias_type=fb.TensorType.INT32)),
    "dense_int32_bias": ("dense", dict(n_in=25, n_out=9, bias_type=fb.TensorType.INT32)),
    "dense_int32_bias_per_channel_batch2": ("dense", dict(per_channel=True, batch=2,
                                                          bias_type=fb.TensorType.INT32)),
}


@pytest.mark.parametrize("case", CASES)
def test_each_op_equals_tflite_micro(case, tmp_path):
    kind, kw = CASES[case]
    data = one_op(kind, **kw)
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    layer = read_tflite(path).layers[0]
    assert layer.block.activation_bits == 16 and layer.block.op.endswith("_s16")
    assert getattr(layer.block, "bias_bits", 64) == (32 if "int32" in case else 64)
    out = check(data, tmp_path, n=4)
    assert out.dtype == np.int16
    inside = out[(out > -32768) & (out < 32767)]
    assert len(np.unique(inside)) >= min(20 if "relu" in case else 60, out.size * 3 // 4), np.unique(out)
    if "relu6" in case or "n1_to_1" in case:  # the clamp at the bound's quantized value is reached
        assert out.max() < 32767 and (out == out.max()).sum() > 1


def network(seed=0) -> bytes:
    """x [1, 9, 8, 3] -> conv 3x3 stride 2 relu (6 channels) -> depthwise 3x3 multiplier 2 dilated
    (2, 1) (12) -> max pool 2x2 -> + a 1x1 conv of it -> times the pool -> less the pool -> average
    pool -> dense 12 -> 7 relu -> dense 7 -> 5 per channel, all 16x8."""
    rng = np.random.default_rng(seed)
    in_s = 0.002
    x = act16((1, 9, 8, 3), in_s, "x")
    c1, y1, s1, hw1 = conv_layer(rng, x, in_s, (9, 8), 3, cout=6, stride=(2, 2), act=ACT.RELU, name="c1")
    c2, y2, s2, hw2 = conv_layer(rng, y1, s1, hw1, 6, depthwise=True, mult=2, dilation=(2, 1), name="c2")
    p1, y3, hw3 = pool_layer(y2, s2, hw2, 12, name="p1")
    c3, y4, s4, _ = conv_layer(rng, y3, s2, hw3, 12, cout=12, k=(1, 1), name="c3")
    a, y5 = add_layer(y3, y4, (1, *hw3, 12), 2 * max(s2, s4), act=ACT.RELU)
    s5 = 2 * max(s2, s4)
    m, y5m = mul_layer(y5, y3, (1, *hw3, 12), s5 * s2 * 4000)
    s6 = 2 * max(s5 * s2 * 4000, s2)
    sb, y5s = add_layer(y5m, y3, (1, *hw3, 12), s6, name="s", sub=True)  # XLA's code: CMSIS-NN has no subtract
    p2, y6, _ = pool_layer(y5s, s6, hw3, 12, kind=OP.AVERAGE_POOL_2D, window=hw3, stride=(1, 1),
                           padding=VALID, name="p2")
    r = fb.ReshapeOptionsT()
    r.newShape = [1, 12]
    y7 = act16((1, 12), s6, "flat")
    flat = operator(OP.RESHAPE, [y6], [y7], r, fb.BuiltinOptions.ReshapeOptions)
    d, y8, s8 = dense_layer(rng, y7, s6, 12, n_out=7, act=ACT.RELU)
    # per channel: arm_fully_connected_s16 takes one multiplier, so this one stays XLA's code
    d2, y9, _ = dense_layer(rng, y8, s8, 7, n_out=5, per_channel=True, name="d2")
    return model_bytes([c1, c2, p1, c3, a, m, sb, p2, flat, d, d2], [x], [y9])


def test_network_bit_exact_with_tflite_micro_in_every_variant(tmp_path):
    path = tmp_path / "net16x8.tflite"
    path.write_bytes(network())
    c = capture(path, None, tmp_path / "cap")
    assert [line.split(" onto ")[1] for line in c.log if line.startswith("lowered ")] == \
        ["arm_convolve_s16", "arm_depthwise_conv_s16", "arm_max_pool_s16", "arm_convolve_s16",
         "arm_elementwise_add_s16", "arm_elementwise_mul_s16", "arm_avgpool_s16", "arm_fully_connected_s16"]
    x = c.manifest.inputs[0].array()
    assert x.dtype == np.int16
    (want,) = imported.run_tflite_micro(imported.read(path), [(x,)])[0]
    got = c.manifest.outputs[0].array()
    np.testing.assert_array_equal(got, want)  # the reference QEMU is held to is TFLite Micro's
    assert got.dtype == np.int16 and len(np.unique(got)) == 5
    assert any("kept XLA's code for cmsis_nn.fully_connected_s16." in line and "per-channel" in line
               and "arm_fully_connected_s16" in line for line in c.log), c.log
    assert any("kept XLA's code for cmsis_nn.elementwise_sub_s16." in line and "no CMSIS-NN subtract" in line
               for line in c.log), c.log
    # the lowered calls: conv 5x4x6 outputs of 27 taps, depthwise 5x4x12 of 9, the 1x1 conv
    # 3x2x12 of 12, dense 7 of 12 (the per-channel one is XLA's code: not a kernel call)
    assert macs.count(c.model_ll.read_text()) == 5 * 4 * 6 * 27 + 5 * 4 * 12 * 9 + 3 * 2 * 12 * 12 + 12 * 7
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_int32_biases_bit_exact_with_tflite_micro_in_every_variant(tmp_path):
    """A 3x3 conv with an INT32 bias and a 1x1 conv without one but quantized_bias_type INT32
    (both arm_convolve_s16 with is_int32_bias), then a dense layer with an INT32 bias (XLA's
    int32 code: arm_fully_connected_s16 takes an int64 bias), on QEMU against TFLite Micro."""
    rng = np.random.default_rng(12)
    in_s = 0.002
    x = act16((1, 7, 6, 4), in_s, "x")
    c1, y1, s1, hw1 = conv_layer(rng, x, in_s, (7, 6), 4, cout=6, stride=(2, 2), bias_type=fb.TensorType.INT32,
                                 name="c1")
    c2, y2, s2, _ = conv_layer(rng, y1, s1, hw1, 6, cout=5, k=(1, 1), with_bias=False,
                               quantized_bias_type=fb.TensorType.INT32, act=ACT.RELU, name="c2")
    r = fb.ReshapeOptionsT()
    n = hw1[0] * hw1[1] * 5
    r.newShape = [1, n]
    flat = act16((1, n), s2, "flat")
    rs = operator(OP.RESHAPE, [y2], [flat], r, fb.BuiltinOptions.ReshapeOptions)
    d, y3, _ = dense_layer(rng, flat, s2, n, n_out=6, bias_type=fb.TensorType.INT32)
    path = tmp_path / "int32bias.tflite"
    path.write_bytes(model_bytes([c1, c2, rs, d], [x], [y3]))
    c = capture(path, None, tmp_path / "cap", examples=2)
    assert [line.split(" onto ")[1] for line in c.log if line.startswith("lowered ")] == \
        ["arm_convolve_s16", "arm_convolve_s16"]
    assert any("kept XLA's code for cmsis_nn.fully_connected_s16." in line and "an int32 bias" in line
               for line in c.log), c.log
    ir = c.model_ll.read_text()
    structs = re.findall(r"bias_data = private unnamed_addr constant \{ ptr, i8 \} (.*), align 4", ir)
    assert sorted(structs) == ["{ ptr @int32bias_w_b0, i8 1 }", "{ ptr null, i8 1 }"]  # is_int32_bias on both
    (want,) = imported.run_tflite_micro(imported.read(path), [(c.manifest.inputs[0].array(),)])[0]
    got = c.manifest.outputs[0].array()
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) >= 5
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def _i32(v, name):
    return me.Tensor(shape=np.asarray(v).shape, dtype=fb.TensorType.INT32, data=np.asarray(v, np.int32), name=name)


def movement_op(kind):
    """(ops, inputs, outputs) of one movement op on int16 x [1, 4, 5, 3]."""
    x = act16((1, 4, 5, 3), 0.002, "x")
    paddings = _i32([[0, 0], [1, 1], [2, 1], [0, 0]], "p")
    if kind in ("pad", "padv2"):
        y = act16((1, 6, 8, 3), 0.002, "y")
        ins = [x, paddings]
        if kind == "padv2":
            ins.append(me.Tensor(shape=(1,), dtype=fb.TensorType.INT16, data=np.array([1234], np.int16), name="v",
                                 quantization=me.Quantization(0.002, 0)))
        return [operator(OP.PADV2 if kind == "padv2" else OP.PAD, ins, [y])], [x], [y]
    if kind == "concatenation":
        z, y = act16((1, 4, 5, 2), 0.002, "z"), act16((1, 4, 5, 5), 0.002, "y")
        o = fb.ConcatenationOptionsT()
        o.axis = -1
        return [operator(OP.CONCATENATION, [x, z], [y], o, fb.BuiltinOptions.ConcatenationOptions)], [x, z], [y]
    if kind == "transpose":
        y = act16((1, 3, 4, 5), 0.002, "y")
        return [operator(OP.TRANSPOSE, [x, _i32([0, 3, 1, 2], "perm")], [y])], [x], [y]
    y = act16((1, 7, 9, 3), 0.002, "y")
    o = fb.ResizeNearestNeighborOptionsT()
    o.halfPixelCenters = True
    return [operator(OP.RESIZE_NEAREST_NEIGHBOR, [x, _i32([7, 9], "size")], [y], o,
                     fb.BuiltinOptions.ResizeNearestNeighborOptions)], [x], [y]


@pytest.mark.parametrize("kind", ["pad", "padv2", "concatenation", "transpose", "resize_nearest"])
def test_movement_ops_equal_tflite_micro(kind, tmp_path):
    """The movement ops on INT16 data copy the values, as TFLite Micro's kernels do (PAD with 0)."""
    out = check(model_bytes(*movement_op(kind)), tmp_path, n=2)
    assert out.dtype == np.int16 and len(np.unique(out)) >= 100
    if kind == "pad":
        assert (out == 0).sum() >= 2 * (6 * 8 - 4 * 5) * 3
    if kind == "padv2":
        assert (out == 1234).sum() >= 2 * (6 * 8 - 4 * 5) * 3


MEANS = {"spatial_keep": ([1, 2], True, (1, 1, 1, 3), 0.0005), "rows": ([1], False, (1, 5, 3), 0.0011),
         "channels_keep": ([3], True, (1, 4, 5, 1), 0.002), "columns": ([2], False, (1, 4, 3), 0.00093)}


@pytest.mark.parametrize("case", MEANS)
def test_mean_equals_tflite_micro(case, tmp_path):
    """int16 MEAN over any axes: TFLite Micro's QuantizedMeanOrSum on int16 (an int32 sum, 1/count
    folded into the multiplier), clamped to int16."""
    axes, keep, out_shape, out_s = MEANS[case]
    x, y = act16((1, 4, 5, 3), 0.002, "x"), act16(out_shape, out_s, "y")
    o = fb.ReducerOptionsT()
    o.keepDims = keep
    data = model_bytes([operator(OP.MEAN, [x, _i32(axes, "axes")], [y], o, fb.BuiltinOptions.ReducerOptions)],
                       [x], [y])
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    assert read_tflite(path).layers[0].block.op == "mean_s16"
    out = check(data, tmp_path, n=3)
    assert out.dtype == np.int16 and len(np.unique(out)) >= 9


def test_movement_network_in_every_variant(tmp_path):
    """x -> PAD -> RESIZE_NEAREST -> TRANSPOSE, and CONCATENATION of x with a conv of it, int16 on
    QEMU in every variant against TFLite Micro."""
    rng = np.random.default_rng(14)
    x = act16((1, 4, 5, 3), 0.002, "x")
    pad = act16((1, 6, 8, 3), 0.002, "pad")
    big = act16((1, 9, 11, 3), 0.002, "big")
    moved = act16((1, 3, 9, 11), 0.002, "moved")
    ro = fb.ResizeNearestNeighborOptionsT()
    ro.alignCorners = True
    conv, y, _, _ = conv_layer(rng, x, 0.002, (4, 5), 3, cout=2, name="c")
    y.quantization = me.Quantization(0.002, 0)  # quantized as x: the concatenation copies both
    cat = act16((1, 4, 5, 5), 0.002, "cat")
    co = fb.ConcatenationOptionsT()
    co.axis = 3
    ops = [operator(OP.PAD, [x, _i32([[0, 0], [1, 1], [2, 1], [0, 0]], "p")], [pad]),
           operator(OP.RESIZE_NEAREST_NEIGHBOR, [pad, _i32([9, 11], "size")], [big], ro,
                    fb.BuiltinOptions.ResizeNearestNeighborOptions),
           operator(OP.TRANSPOSE, [big, _i32([0, 3, 1, 2], "perm")], [moved]),
           conv, operator(OP.CONCATENATION, [x, y], [cat], co, fb.BuiltinOptions.ConcatenationOptions)]
    path = tmp_path / "moves.tflite"
    path.write_bytes(model_bytes(ops, [x], [moved, cat]))
    c = capture(path, None, tmp_path / "cap", examples=2)
    want = imported.run_tflite_micro(imported.read(path), [(c.manifest.inputs[0].array(),)])[0]
    for k, w in enumerate(want):
        np.testing.assert_array_equal(c.manifest.outputs[k].array(), w)
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def _refused(data: bytes, tmp_path) -> str:
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    with pytest.raises(UserError) as e:
        read_tflite(path)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_what_the_reader_refuses_is_one_line(tmp_path):
    rng = np.random.default_rng(3)
    x = act16((1, 5, 5, 2), 0.01, "x")
    op, y, _, _ = conv_layer(rng, x, 0.01, (5, 5), 2, depthwise=True, bias_type=fb.TensorType.INT32)
    assert "INT32 bias" in _refused(model_bytes([op], [x], [y]), tmp_path)  # TFLite Micro reads it as INT64
    xz = act16((1, 5, 5, 2), 0.01, "x", zero_point=3)
    op, y, _, _ = conv_layer(rng, xz, 0.01, (5, 5), 2)
    assert "zero point 3" in _refused(model_bytes([op], [xz], [y]), tmp_path)
    ops, ins, outs = movement_op("concatenation")
    ins[1].quantization = me.Quantization(0.004, 0)  # TFLite Micro would copy it unscaled
    assert "quantization differs" in _refused(model_bytes(ops, ins, outs), tmp_path)
    ops, ins, outs = movement_op("transpose")
    outs[0].quantization = me.Quantization(0.002, 5)
    assert "zero point 0" in _refused(model_bytes(ops, ins, outs), tmp_path)
    xs, ys = act16((1, 10), 0.01, "x"), act16((1, 10), 1 / 32768, "y")
    msg = _refused(model_bytes([operator(OP.HARD_SWISH, [xs], [ys])], [xs], [ys]), tmp_path)
    assert "HARD_SWISH" in msg and "INT16" in msg
    # an output scale so small its multiplier's shift passes what the int64 requantization takes
    x = act16((1, 5, 5, 2), 0.01, "x")
    op, y, _, _ = conv_layer(rng, x, 0.01, (5, 5), 2)
    y.quantization = me.Quantization(1e-9, 0)
    assert "shift" in _refused(model_bytes([op], [x], [y]), tmp_path) and "> 14" in _refused(
        model_bytes([op], [x], [y]), tmp_path)


@pytest.mark.parametrize("padding", [SAME, VALID])
def test_int8_max_pool_equals_tflite_micro(padding, tmp_path):
    """MAX_POOL_2D came with the 16x8 ops; int8 files read it too (CMSIS-NN's arm_max_pool_s8)."""
    from test_tflite_import import act8

    o = fb.Pool2DOptionsT()
    o.padding, (o.strideH, o.strideW), (o.filterHeight, o.filterWidth) = padding, (2, 2), (3, 2)
    o.fusedActivationFunction = ACT.RELU
    oh, ow = out_size(7, 3, 2, 1, padding), out_size(9, 2, 2, 1, padding)
    x, y = act8((1, 7, 9, 5), 0.1, -7, "x"), act8((1, oh, ow, 5), 0.1, -7, "y")
    data = model_bytes([operator(OP.MAX_POOL_2D, [x], [y], o, fb.BuiltinOptions.Pool2DOptions)], [x], [y])
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    assert read_tflite(path).layers[0].block.op == "max_pool_s8"
    out = check(data, tmp_path, n=4)
    assert out.min() == -7 and len(np.unique(out)) > 60  # relu's clamp at the zero point, the rest spread
