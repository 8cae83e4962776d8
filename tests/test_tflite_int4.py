"""int4 weights read from .tflite files (TensorType INT4: two weights a byte, the first in the low
nibble): CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED take an INT4 filter, which TFLite Micro
unpacks into int8 before its reference kernels (tensor_utils::UnpackDenseInt4IntoInt8). The
reader keeps the filter packed for the block (weight_bits=4), which capture lowers onto CMSIS-NN's
s4 functions. Each op on the host against TFLite Micro; a network of the three (odd channel
counts, stride 2, multiplier 2, a dense layer over 200 inputs) in every variant on QEMU,
bit-exact with TFLite Micro; what the reader refuses."""

from __future__ import annotations

import numpy as np
import pytest
from every_variant import every_variant_passes
from test_tflite_import import (ACT, OP, SAME, VALID, act8, check, conv_options, fb, me, model_bytes, operator,
                                out_scale, out_size, spread)

from specializer.capture import imported, layers
from specializer.capture.capture import capture
from specializer.errors import UserError
from specializer.importers.tflite import read_tflite
from specializer.quant import blocks
from specializer.report import macs


def int4(values: np.ndarray, scales, axis, name="w"):
    """An INT4 constant as TFLite's converter writes one: symmetric, packed."""
    scales = [float(s) for s in np.atleast_1d(scales)]
    return me.Tensor(shape=values.shape, dtype=fb.TensorType.INT4, data=blocks.pack_int4(values).tobytes(),
                     quantization=me.Quantization(scales, [0] * len(scales), axis), name=name)


def rand4(rng, shape):
    return rng.integers(-7, 8, shape).astype(np.int8)


def conv_layer(rng, x, in_s, hw, cin, *, depthwise=False, mult=1, cout=5, k=(3, 3), stride=(1, 1),
               padding=SAME, act=ACT.NONE, per_channel=True, name="c"):
    """(op, output tensor, its scale, its spatial size) of an INT4-filter conv or depthwise."""
    n_out = cin * mult if depthwise else cout
    oh, ow = (out_size(hw[i], k[i], stride[i], 1, padding) for i in range(2))
    depth = k[0] * k[1] * (1 if depthwise else cin)
    w_s = rng.uniform(0.5, 2.0, n_out if per_channel else 1) / 7
    # int4 weights uniform in [-7, 7] have a std of about 4.3 (int8's 73)
    y_s = out_scale(in_s, w_s.mean(), depth) * 4.3 / 73
    y = act8((1, oh, ow, n_out), y_s, int(rng.integers(-10, 10)), f"{name}_y")
    w = int4(rand4(rng, (1, *k, n_out) if depthwise else (n_out, *k, cin)), w_s,
             (3 if depthwise else 0) if per_channel else None, f"{name}_w")
    b = me.Tensor(shape=(n_out,), dtype=fb.TensorType.INT32, name=f"{name}_b",
                  data=rng.integers(-300, 300, n_out).astype(np.int32),
                  quantization=me.Quantization([float(in_s * s) for s in np.broadcast_to(w_s, n_out)],
                                               [0] * n_out, 0))
    opts = conv_options(padding, stride, (1, 1), act, mult if depthwise else None)
    code = OP.DEPTHWISE_CONV_2D if depthwise else OP.CONV_2D
    return operator(code, [x, w, b], [y], *opts), y, y_s, (oh, ow)


def dense_layer(rng, x, in_s, n_in, n_out=7, name="d"):
    w_s = rng.uniform(0.5, 2.0) / 7
    y_s = out_scale(in_s, w_s, n_in) * 4.3 / 73
    y = act8((1, n_out), y_s, int(rng.integers(-10, 10)), f"{name}_y")
    w = int4(rand4(rng, (n_out, n_in)), w_s, None, f"{name}_w")
    b = me.Tensor(shape=(n_out,), dtype=fb.TensorType.INT32, name=f"{name}_b",
                  data=rng.integers(-300, 300, n_out).astype(np.int32),
                  quantization=me.Quantization([float(np.float32(in_s) * np.float32(w_s))], [0]))
    o = fb.FullyConnectedOptionsT()
    return operator(OP.FULLY_CONNECTED, [x, w, b], [y], o, fb.BuiltinOptions.FullyConnectedOptions), y


def one_op(kind, seed=0, **kw) -> bytes:
    rng = np.random.default_rng(seed)
    hw, cin, in_s = kw.pop("hw", (9, 8)), kw.pop("cin", 3), 0.05
    if kind == "dense":
        n_in = kw.pop("n_in", 24)
        x = act8((1, n_in), in_s, int(rng.integers(-20, 20)), "x")
        op, y = dense_layer(rng, x, in_s, n_in, **kw)
    else:
        x = act8((1, *hw, cin), in_s, int(rng.integers(-20, 20)), "x")
        op, y, _, _ = conv_layer(rng, x, in_s, hw, cin, depthwise=kind == "depthwise", **kw)
    return model_bytes([op], [x], [y])


def network(seed=0) -> bytes:
    """x [1, 9, 8, 3] -> conv 3x3 stride 2 (5 channels) -> depthwise 3x3 multiplier 2 (10) ->
    dense 200 -> 7, every filter INT4."""
    rng = np.random.default_rng(seed)
    in_s = 0.05
    x = act8((1, 9, 8, 3), in_s, 3, "x")
    c1, y1, s1, hw1 = conv_layer(rng, x, in_s, (9, 8), 3, stride=(2, 2), act=ACT.RELU, name="c1")
    c2, y2, s2, hw2 = conv_layer(rng, y1, s1, hw1, 5, depthwise=True, mult=2, name="c2")
    d, y3 = dense_layer(rng, y2, s2, hw2[0] * hw2[1] * 10)
    return model_bytes([c1, c2, d], [x], [y3])


CASES = {
    "conv": ("conv", dict()),
    "conv_valid_stride2_per_tensor": ("conv", dict(padding=VALID, stride=(2, 2), per_channel=False)),
    "conv_1x1_odd": ("conv", dict(k=(1, 1), cin=7, cout=9)),
    "depthwise": ("depthwise", dict(cin=6)),
    "depthwise_multiplier2": ("depthwise", dict(cin=3, mult=2)),
    "depthwise_stride2_relu": ("depthwise", dict(cin=5, stride=(2, 2), act=ACT.RELU)),
    "dense": ("dense", dict()),
    "dense_odd": ("dense", dict(n_in=25, n_out=9)),
}


@pytest.mark.parametrize("case", CASES)
def test_each_op_equals_tflite_micro(case, tmp_path):
    kind, kw = CASES[case]
    data = one_op(kind, **kw)
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    layer = read_tflite(path).layers[0]
    assert layer.block.weight_bits == 4 and layer.block.op.endswith("_s4")
    out = check(data, tmp_path, n=4)
    assert spread(out) >= (3 if "relu" in case else 8), out


def test_network_bit_exact_with_tflite_micro_in_every_variant(tmp_path):
    path = tmp_path / "int4.tflite"
    path.write_bytes(network())
    c = capture(path, None, tmp_path / "cap")
    assert [line.split(" onto ")[1] for line in c.log if line.startswith("lowered ")] == \
        ["arm_convolve_s4", "arm_depthwise_conv_s4", "arm_fully_connected_s4"]
    x = c.manifest.inputs[0].array()
    (want,) = imported.run_tflite_micro(imported.read(path), [(x,)])[0]
    got = c.manifest.outputs[0].array()
    np.testing.assert_array_equal(got, want)  # the reference QEMU is held to is TFLite Micro's
    assert spread(got.ravel()) >= 4
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_layers_count_the_filters_not_their_packed_bytes(tmp_path):
    path = tmp_path / "int4.tflite"
    path.write_bytes(network())
    c = capture(path, None, tmp_path / "cap")
    table = layers.load(c.model_ll.with_name("layers.json"))
    # conv: 5 x 4 x 5 outputs of 27 taps; depthwise: 5 x 4 x 10 of 9; dense 200 x 7
    assert [(x.op, x.macs) for x in table.layers] == [("CONV_2D", 2700), ("DEPTHWISE_CONV_2D", 1800),
                                                      ("FULLY_CONNECTED", 1400)]
    assert [x.weight_bytes for x in table.layers] == [68 + 20, 45 + 40, 700 + 28]  # packed filters + biases
    assert macs.count(c.model_ll.read_text()) == 2700 + 1800 + 1400


def test_reader_refuses_in_one_line(tmp_path):
    path = tmp_path / "bad.tflite"
    rng = np.random.default_rng(0)
    x, y = act8((1, 4, 4, 3), 0.05, 0, "x"), act8((1, 8, 8, 5), 0.1, 0, "y")
    o = fb.TransposeConvOptionsT()
    o.padding, o.strideH, o.strideW = SAME, 2, 2
    shape = me.Tensor(shape=(4,), dtype=fb.TensorType.INT32, data=np.array([1, 8, 8, 5], np.int32), name="shape")
    tconv = operator(OP.TRANSPOSE_CONV, [shape, int4(rand4(rng, (5, 3, 3, 3)), [0.1], None), x], [y], o,
                     fb.BuiltinOptions.TransposeConvOptions)
    path.write_bytes(model_bytes([tconv], [x], [y]))
    with pytest.raises(UserError, match=r"bad.tflite: operator 0 \(TRANSPOSE_CONV\): .*is INT4, expected INT8") as e:
        read_tflite(path)
    assert "\n" not in str(e.value)

    w = me.Tensor(shape=(5, 3, 3, 3), dtype=fb.TensorType.INT4, data=bytes(135), name="w",  # unpacked: 2x the bytes
                  quantization=me.Quantization([0.1], [0]))
    op = operator(OP.CONV_2D, [x, w], [act8((1, 4, 4, 5), 0.1, 0, "y")], *conv_options())
    path.write_bytes(model_bytes([op], [x], [op.outputs[0]]))
    with pytest.raises(UserError, match=r"bad.tflite: tensor 1 \('w'\): 135 bytes of data, but INT4\[5, 3, 3, 3\] "
                                        "takes 68"):
        read_tflite(path)
