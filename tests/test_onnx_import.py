"""The .onnx reader (specializer.importers.onnx_model) against onnx.reference's ReferenceEvaluator.

One small model per op and option, built here with onnx.helper, run through both on the same
inputs: float outputs within 1e-4 of the output's largest magnitude (imported.difference, the
rule capture applies). The single-layer PyTorch models the onnx wheel ships (its backend test
data) against their own stored outputs too. QDQ int8: each int8 layer on onnx.reference's own
inputs within one int8 step (the QDQ rule), MaxPool, Add and QuantizeLinear exactly. Refusals and
damaged files: one line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import QDQ_OPSET, float_cnn, model, qdq_cnn, qdq_gate, save, vi

from specializer.capture.imported import difference
from specializer.errors import UserError
from specializer.importers.onnx_model import layerwise, read_onnx, reference_outputs
from specializer.quant.params import ConvParams, DepthwiseParams, FullyConnectedParams, PoolParams

WHEEL_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"


def check(path: Path, xs=None, exact_int8=True):
    """Read path, run it on its example inputs (or xs) and onnx.reference: equal by capture's rule."""
    m = read_onnx(path)
    xs = list(m.example_inputs) if xs is None else xs
    got = m(*xs)
    got = got if isinstance(got, tuple) else (got,)
    want = reference_outputs(path, xs)
    for spec, g, w in zip(m.outputs, got, want):
        why = difference(spec.name, np.asarray(g), w, "onnx.reference", exact=spec.quant is not None and exact_int8)
        assert why is None, why
    return m


def one(tmp_path, op, inputs, shapes, inits=None, opset=17, n_out=1, **attrs) -> Path:
    """A model of one node: computed inputs `shapes` (name -> shape), constants `inits`."""
    nodes = [helper.make_node(op, inputs, [f"y{k}" for k in range(n_out)], name="the_node", **attrs)]
    outs = [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None) for k in range(n_out)]
    m = model(nodes, [vi(n, s) for n, s in shapes.items()], outs, inits or {}, opset=opset)
    return save(m, tmp_path / f"{op.lower()}.onnx")


def rnd(rng, *shape, scale=1.0):
    return (rng.normal(size=shape) * scale).astype(np.float32)


# ---------------------------------------------------------------- float ops, one by one

CONVS = {
    "plain": dict(w=(4, 3, 3, 3)),
    "pads": dict(w=(4, 3, 3, 3), pads=[1, 0, 2, 1]),
    "strides": dict(w=(4, 3, 3, 2), strides=[2, 3]),
    "dilations": dict(w=(4, 3, 2, 3), dilations=[2, 2], pads=[1, 1, 1, 1]),
    "same_upper": dict(w=(4, 3, 4, 4), auto_pad="SAME_UPPER", strides=[2, 2]),
    "same_lower": dict(w=(4, 3, 4, 4), auto_pad="SAME_LOWER"),
    "valid": dict(w=(4, 3, 3, 3), auto_pad="VALID"),
    "depthwise": dict(w=(3, 1, 3, 3), group=3, pads=[1, 1, 1, 1]),
    "depthwise_mult2": dict(w=(6, 1, 3, 3), group=3, strides=[2, 2]),
    "groups": dict(w=(6, 1, 3, 3), group=3, cin=3),
    "no_bias": dict(w=(4, 3, 1, 1), bias=False),
}


@pytest.mark.parametrize("case", CONVS, ids=list(CONVS))
def test_conv(case, tmp_path):
    kw = dict(CONVS[case])
    rng = np.random.default_rng(1)
    w = rnd(rng, *kw.pop("w"))
    kw.pop("cin", None)
    bias = kw.pop("bias", True)
    inits = {"w": w, **({"b": rnd(rng, w.shape[0])} if bias else {})}
    m = check(one(tmp_path, "Conv", ["x", "w", *(["b"] if bias else [])], {"x": [1, 3, 9, 8]}, inits, **kw))
    # the filter is re-laid out once (OHWI); only the graph boundary transposes
    assert m.weights["w0"].shape == (w.shape[0], w.shape[2], w.shape[3], w.shape[1])
    assert [layer.name.split(" ")[0] for layer in m.layers] == ["layout", "Conv", "layout"]


CONV_TRANSPOSES = {
    "stride2": dict(w=(3, 4, 3, 3), strides=[2, 2]),
    "pads_output_padding": dict(w=(3, 5, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
    "asym_pads_strides": dict(w=(3, 2, 4, 3), strides=[3, 2], pads=[1, 0, 2, 1]),
    "dilations": dict(w=(3, 4, 3, 2), dilations=[2, 2], strides=[2, 1]),
    "same_upper": dict(w=(3, 4, 3, 3), strides=[2, 2], auto_pad="SAME_UPPER"),
    "same_lower": dict(w=(3, 4, 4, 4), strides=[2, 2], auto_pad="SAME_LOWER"),
    "no_bias_odd_channels": dict(w=(3, 7, 2, 2), strides=[2, 2], bias=False),
}


@pytest.mark.parametrize("case", CONV_TRANSPOSES, ids=list(CONV_TRANSPOSES))
def test_conv_transpose(case, tmp_path):
    kw = dict(CONV_TRANSPOSES[case])
    rng = np.random.default_rng(3)
    w = rnd(rng, *kw.pop("w"))
    bias = kw.pop("bias", True)
    n_out = w.shape[1] * kw.get("group", 1)
    inits = {"w": w, **({"b": rnd(rng, n_out)} if bias else {})}
    m = check(one(tmp_path, "ConvTranspose", ["x", "w", *(["b"] if bias else [])], {"x": [1, 3, 9, 8]}, inits, **kw))
    assert [layer.name.split(" ")[0] for layer in m.layers] == ["layout", "ConvTranspose", "layout"]


def scatter_conv_transpose(x, w, b, strides, dil, begin, out_hw, group):
    """ConvTranspose as the operator's text reads: every input pixel adds its filter-weighted
    values at out = in * stride + k * dilation - pad_begin (float64)."""
    n, cin, ih, iw = x.shape
    og, kh, kw = w.shape[1:]
    out = np.zeros((n, og * group, *out_hw))
    for ci in range(cin):
        g = ci // (cin // group)
        for iy in range(ih):
            for ix in range(iw):
                for ky in range(kh):
                    for kx in range(kw):
                        oy, ox = iy * strides[0] + ky * dil[0] - begin[0], ix * strides[1] + kx * dil[1] - begin[1]
                        if 0 <= oy < out_hw[0] and 0 <= ox < out_hw[1]:
                            out[:, g * og:(g + 1) * og, oy, ox] += x[:, ci, iy, ix, None] * w[ci, :, ky, kx]
    return out + b[None, :, None, None]


@pytest.mark.parametrize("attrs, begin, out_hw", [
    # output_shape: total padding 19 - 17 and 17 - 15, the larger half at the start (not SAME_UPPER)
    (dict(strides=[2, 2], output_shape=[17, 15]), (1, 1), (17, 15)),
    (dict(strides=[2, 2], group=3), (0, 0), (19, 17)),
    (dict(strides=[2, 1], group=3, pads=[1, 0, 0, 1], dilations=[1, 2]), (1, 0), (18, 11)),
])
def test_conv_transpose_where_onnx_reference_cannot_run(attrs, begin, out_hw, tmp_path):
    """output_shape and group > 1, which onnx.reference's ConvTranspose fails on (capture then
    refuses in one line): the reader against the operator's text, scattered in numpy."""
    rng = np.random.default_rng(4)
    w = rnd(rng, 3, 2, 3, 3)
    b = rnd(rng, 2 * attrs.get("group", 1))
    m = read_onnx(one(tmp_path, "ConvTranspose", ["x", "w", "b"], {"x": [1, 3, 9, 8]}, {"w": w, "b": b}, **attrs))
    x = rnd(rng, 1, 3, 9, 8)
    want = scatter_conv_transpose(x.astype(np.float64), w, b, attrs["strides"], attrs.get("dilations", (1, 1)),
                                  begin, out_hw, attrs.get("group", 1))
    got = np.asarray(m(x))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_batchnorm_folded_into_the_conv_and_alone(tmp_path):
    rng = np.random.default_rng(2)
    c = 4
    bn = {"g": rng.uniform(0.5, 2, c).astype(np.float32), "be": rnd(rng, c), "mu": rnd(rng, c),
          "var": rng.uniform(0.5, 2, c).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["y"], epsilon=1e-3)]
    path = save(model(nodes, [vi("x", [1, 3, 6, 6])], [vi("y", None)], {"w": rnd(rng, c, 3, 3, 3), "b": rnd(rng, c),
                                                                          **bn}), tmp_path / "bn.onnx")
    m = check(path)
    assert [layer.name.split(" ")[0] for layer in m.layers] == ["layout", "Conv", "layout"]  # folded
    alone = check(one(tmp_path, "BatchNormalization", ["x", "g", "be", "mu", "var"], {"x": [2, 4, 3, 5]}, bn))
    assert [layer.name.split(" ")[0] for layer in alone.layers] == ["BatchNormalization"]


@pytest.mark.parametrize("trans_b, alpha, beta, c_shape", [(1, 1.0, 1.0, (5,)), (0, 0.5, 2.0, (1, 5)),
                                                           (1, 1.0, 1.0, None), (0, 1.0, 0.5, (3, 5))])
def test_gemm(trans_b, alpha, beta, c_shape, tmp_path):
    rng = np.random.default_rng(3)
    b = rnd(rng, *((5, 7) if trans_b else (7, 5)))
    inits = {"b": b, **({"c": rnd(rng, *c_shape)} if c_shape else {})}
    check(one(tmp_path, "Gemm", ["x", "b", *(["c"] if c_shape else [])], {"x": [3, 7]}, inits, transB=trans_b,
              alpha=alpha, beta=beta))


def test_matmul_and_add_of_a_constant(tmp_path):
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])]
    check(save(model(nodes, [vi("x", [2, 6])], [vi("y", None)], {"w": rnd(rng, 6, 4), "b": rnd(rng, 4)}),
               tmp_path / "mm.onnx"))
    check(one(tmp_path, "MatMul", ["x", "w"], {"x": [2, 3, 6]}, {"w": rnd(rng, 6, 4)}))


@pytest.mark.parametrize("op, attrs, opset, inits", [
    ("Relu", {}, 17, {}),
    ("Clip", {}, 17, {"lo": np.array(0, np.float32), "hi": np.array(6, np.float32)}),
    ("Clip", {"min": -0.5, "max": 0.5}, 6, {}),
    ("Softmax", {"axis": 1}, 17, {}),
    ("Softmax", {"axis": 3}, 11, {}),  # opset < 13, the last axis (the only one refused otherwise)
    ("Softmax", {}, 17, {}),
    ("Sigmoid", {}, 17, {}),
    ("Tanh", {}, 17, {}),
    ("LeakyRelu", {}, 17, {}),
    ("LeakyRelu", {"alpha": 0.3}, 17, {}),
    ("HardSigmoid", {"alpha": 0.25, "beta": 0.4}, 17, {}),
    ("HardSwish", {}, 17, {}),
])
def test_elementwise_and_softmax(op, attrs, opset, inits, tmp_path):
    ins = ["x", *inits]
    check(one(tmp_path, op, ins, {"x": [2, 3, 4, 5]}, inits, opset=opset, **attrs))


def test_add_of_two_values_in_nhwc(tmp_path):
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x", "w2"], ["b"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    m = check(save(model(nodes, [vi("x", [1, 2, 5, 5])], [vi("y", None)],
                         {"w": rnd(rng, 3, 2, 3, 3), "w2": rnd(rng, 3, 2, 3, 3)}), tmp_path / "add.onnx"))
    assert [layer.name.split(" ")[0] for layer in m.layers].count("layout") == 2  # in once, out once


@pytest.mark.parametrize("op, attrs", [
    ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("MaxPool", dict(kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1])),
    ("MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2])),
    ("GlobalAveragePool", {}),
    ("GlobalMaxPool", {}),
])
def test_pools(op, attrs, tmp_path):
    check(one(tmp_path, op, ["x"], {"x": [2, 3, 7, 6]}, **attrs))


def test_reshape_flatten_transpose(tmp_path):
    rng = np.random.default_rng(6)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Flatten", ["c"], ["f"]),            # of an NHWC value: free
             helper.make_node("Gemm", ["f", "w2"], ["g"], transB=1),  # reads it through permuted rows
             helper.make_node("Reshape", ["g", "shape"], ["r"]),
             helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 1])]
    inits = {"w": rnd(rng, 4, 3, 2, 2), "w2": rnd(rng, 6, 4 * 4 * 3), "shape": np.array([1, 2, 3], np.int64)}
    m = check(save(model(nodes, [vi("x", [1, 3, 5, 4])], [vi("y", None)], inits), tmp_path / "shapes.onnx"))
    # one transpose into NHWC at the input; the flatten and the Gemm need none, the output one
    assert [layer.name.split(" ")[0] for layer in m.layers] == ["layout", "Conv", "Flatten", "Gemm", "Reshape",
                                                                  "layout"]


def test_float_cnn_conv_bn_relu_pool_gemm_softmax(tmp_path):
    path = save(float_cnn(np.random.default_rng(1)), tmp_path / "float_cnn.onnx")
    m = check(path)
    names = [layer.name.split(" ")[0] for layer in m.layers]
    assert names == ["layout", "Conv", "Relu", "MaxPool", "Conv", "Clip", "GlobalAveragePool", "Flatten", "Gemm",
                     "Softmax"], names  # BatchNormalization folded; NCHW -> NHWC once, at the input
    for k in range(5):  # more inputs
        check(path, [np.random.default_rng(k).normal(size=(1, 2, 8, 8)).astype(np.float32) * 3])


# ---------------------------------------------------------------- the onnx wheel's PyTorch models

WHEEL_MODELS = ["test_Conv2d", "test_Conv2d_depthwise", "test_Conv2d_depthwise_padded",
                "test_Conv2d_depthwise_strided", "test_Conv2d_depthwise_with_multiplier", "test_Conv2d_dilated",
                "test_Conv2d_groups", "test_Conv2d_no_bias", "test_Conv2d_padding", "test_Conv2d_strided",
                "test_Linear", "test_Linear_no_bias", "test_AvgPool2d", "test_AvgPool2d_stride", "test_MaxPool2d",
                "test_BatchNorm2d_eval", "test_ReLU", "test_Softmax", "test_PixelShuffle"]


def wheel_model(name: str, folder: str = "pytorch-converted") -> Path:
    d = WHEEL_DATA / folder / name
    if not (d / "model.onnx").exists():
        pytest.skip(f"{d} is absent (the onnx wheel ships its backend test data; this one does not)")
    return d


def stored(d: Path, what: str) -> list[np.ndarray]:
    out = []
    for f in sorted((d / "test_data_set_0").glob(f"{what}_*.pb")):
        t = onnx.TensorProto()
        t.ParseFromString(f.read_bytes())
        out.append(numpy_helper.to_array(t))
    return out


@pytest.mark.parametrize("name", WHEEL_MODELS)
def test_wheel_pytorch_models_equal_their_stored_outputs(name):
    d = wheel_model(name)
    xs, want = stored(d, "input"), stored(d, "output")
    m = check(d / "model.onnx", xs[:1])
    got = m(*xs[:1])
    assert difference("out0", np.asarray(got), want[0], "the stored output") is None


# ---------------------------------------------------------------- QDQ int8

@pytest.fixture(scope="module")
def qdq(tmp_path_factory) -> Path:
    return save(qdq_cnn(np.random.default_rng(3)), tmp_path_factory.mktemp("qdq") / "qdq.onnx")


def test_qdq_groups_become_the_int8_blocks(qdq):
    m = read_onnx(qdq)
    blocks = [type(layer.block).__name__ for layer in m.layers if layer.block is not None]
    assert blocks == ["ConvParams", "DepthwiseParams", "PoolParams", "AddParams", "PoolParams",
                      "FullyConnectedParams", "SoftmaxParams"]
    conv = next(layer.block for layer in m.layers if isinstance(layer.block, ConvParams))
    assert len(conv.multipliers) == 6 and conv.activation[0] == conv.output_offset  # per channel; Relu: the clamp
    assert isinstance(next(layer.block for layer in m.layers if isinstance(layer.block, DepthwiseParams)),
                      DepthwiseParams)
    fc = next(layer.block for layer in m.layers if isinstance(layer.block, FullyConnectedParams))
    assert len(fc.multipliers) == 1  # per tensor: lowered onto arm_fully_connected_s8
    assert [s.dtype for s in m.inputs] == ["float32"] and [s.dtype for s in m.outputs] == ["float32"] * 2
    assert all(s.quant is not None for s in m.outputs)  # dequantized int8: compared exactly
    assert sum(isinstance(layer.block, PoolParams) for layer in m.layers) == 2


def test_qdq_layers_within_one_step_of_onnx_reference(qdq):
    """The QDQ rule: CMSIS-NN's arithmetic, layer by layer on onnx.reference's own inputs, within
    one int8 step; MaxPool, Add and QuantizeLinear (float32 x / scale, half to even) exactly."""
    m = read_onnx(qdq)
    totals: dict[str, list[int]] = {}
    for k in range(10):
        x = np.random.default_rng(k).normal(size=(1, 2, 8, 8)).astype(np.float32) * (1 + k % 3)
        for name, n, size, largest in layerwise(m, [x]):
            assert largest <= 1, (name, n, largest)
            t = totals.setdefault(name.split(" ")[0], [0, 0])
            t[0], t[1] = t[0] + n, t[1] + size
    for op in ("QuantizeLinear", "MaxPool", "Add"):
        assert totals[op][0] == 0, (op, totals[op])
    assert totals["Conv"][0] < 0.01 * totals["Conv"][1]


def test_qdq_mul_is_the_mul_block_within_one_step_of_onnx_reference(tmp_path):
    path = save(qdq_gate(np.random.default_rng(4)), tmp_path / "gate.onnx")
    m = read_onnx(path)
    assert [type(layer.block).__name__ for layer in m.layers if layer.block is not None] == \
        ["ConvParams", "ConvParams", "MulParams"]
    diffs, total = 0, 0
    for k in range(6):
        x = np.random.default_rng(k).normal(size=(1, 3, 6, 5)).astype(np.float32)
        for name, n, size, largest in layerwise(m, [x]):
            assert largest <= 1, (name, n, largest)
            if name.startswith("Mul"):
                diffs, total = diffs + n, total + size
    assert total == 6 * 4 * 6 * 5 and diffs < 0.05 * total, (diffs, total)


# ---------------------------------------------------------------- refusals and damaged files

def refused(path: Path) -> str:
    with pytest.raises(UserError) as e:
        read_onnx(path)
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg


def test_an_unsupported_op_names_node_index_and_name(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="first"), helper.make_node("Erf", ["r"], ["y"], name="t")]
    path = save(model(nodes, [vi("x", [1, 4])], [vi("y", None)], {}), tmp_path / "erf.onnx")
    assert refused(path).startswith("erf.onnx: node 1 (Erf 't'): not supported (the reader supports Add, ")


@pytest.mark.parametrize("op, inputs, shapes, inits, attrs, why", [
    ("Conv", ["x", "w"], {"x": [1, 3, 8]}, {"w": np.ones((2, 3, 3), np.float32)}, {},
     "node 0 (Conv 'the_node'): input of rank 3 [1, 3, 8]: the reader takes 2-D spatial (N, C, H, W) tensors only"),
    ("Gemm", ["x", "w"], {"x": [4, 3]}, {"w": np.ones((4, 5), np.float32)}, {"transA": 1},
     "node 0 (Gemm 'the_node'): transA=1 is not supported"),
    ("AveragePool", ["x"], {"x": [1, 2, 5, 5]}, {}, {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
     "node 0 (AveragePool 'the_node'): ceil_mode=1 where it adds an output row or column is not supported"),
    ("MatMul", ["x", "w"], {"x": [2, 3], "w": [3, 4]}, {}, {},
     "node 0 (MatMul 'the_node'): input 1 ('w', B) is computed; the reader takes it only as a constant"),
    ("Softmax", ["x"], {"x": [2, 3, 4]}, {}, {"axis": 1, "opset": 11},
     "node 0 (Softmax 'the_node'): Softmax before opset 13 with axis=1 of 3 (not the last axis) is not supported "
     "(the ONNX operator and onnx.reference disagree there)"),
])
def test_unsupported_options_are_one_line(op, inputs, shapes, inits, attrs, why, tmp_path):
    attrs = dict(attrs)
    path = one(tmp_path, op, inputs, shapes, inits, opset=attrs.pop("opset", 17), **attrs)
    assert refused(path) == f"{path.name}: {why}"


def test_uint8_qdq_is_refused(tmp_path):
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q0"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq0")]
    path = save(model(nodes, [vi("x", [1, 4])], [vi("y", None)], {"s": np.float32(0.1), "z": np.uint8(128)},
                      opset=QDQ_OPSET), tmp_path / "u8.onnx")
    assert refused(path) == ("u8.onnx: node 0 (QuantizeLinear 'q0'): zero point of type uint8: the reader takes "
                             "int8 QDQ only (uint8 is not supported)")


@pytest.mark.parametrize("data, starts", [
    (b"", "e.onnx: not an ONNX model (no graph or no IR version)"),
    (b"TFL3" * 50, "e.onnx: not an ONNX model"),
    (bytes(range(256)) * 4, "e.onnx: not an ONNX model"),
])
def test_not_onnx_is_one_line(data, starts, tmp_path):
    (tmp_path / "e.onnx").write_bytes(data)
    assert refused(tmp_path / "e.onnx").startswith(starts)


def test_damaged_copies_are_one_line_never_a_traceback(tmp_path):
    """Bytes of a real model flipped and cut: read, or refused in one line (UserError)."""
    good = save(float_cnn(np.random.default_rng(1)), tmp_path / "good.onnx").read_bytes()
    rng = np.random.default_rng(0)
    outcomes = {"read": 0, "refused": 0}
    for k in range(150):
        raw = bytearray(good)
        if k % 3 == 0:
            raw = raw[:int(rng.integers(1, len(raw)))]
        else:
            for i in rng.integers(0, len(raw), 1 + k % 5):
                raw[i] ^= int(rng.integers(1, 256))
        path = tmp_path / f"d{k}.onnx"
        path.write_bytes(bytes(raw))
        try:
            read_onnx(path)
            outcomes["read"] += 1
        except UserError as e:
            assert "\n" not in str(e)
            outcomes["refused"] += 1
    assert outcomes["refused"] > 50, outcomes


@pytest.mark.parametrize("op, out_q, exact", [("Sigmoid", (1 / 256, -128), True), ("Tanh", (1 / 128, 0), True),
                                              ("LeakyRelu", (0.03, -20), True), ("HardSwish", (0.03, -20), False)])
def test_qdq_activations_computed_on_the_dequantized_values(op, out_q, exact, tmp_path):
    """Q -> DQ -> op -> Q -> DQ over every int8 input: the activation in float on the dequantized
    values, as onnx.reference computes it; Sigmoid, Tanh and LeakyRelu give its int8 values exactly,
    HardSwish within one step (its x / 6 + 0.5 rounds apart where XLA fuses the multiply-add)."""
    from onnx_models import QDQ_OPSET

    inits = {"xs": np.array(0.05, np.float32), "xz": np.array(3, np.int8), "ys": np.array(out_q[0], np.float32),
             "yz": np.array(out_q[1], np.int8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]), helper.make_node(op, ["xd"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "ys", "yz"], ["sq"]),
             helper.make_node("DequantizeLinear", ["sq", "ys", "yz"], ["y"])]
    path = save(model(nodes, [vi("x", [1, 256])], [vi("y", None)], inits, opset=QDQ_OPSET), tmp_path / "q.onnx")
    x = (np.arange(-128, 128, dtype=np.float32) * 0.05 - 0.15).reshape(1, 256)  # every int8 value of xq
    if exact:
        m = check(path, [x])
    else:
        m = read_onnx(path)
        steps = np.abs(np.asarray(m(x)) - reference_outputs(path, [x])[0]) / np.float32(out_q[0])
        assert steps.max() <= 1.001 and (steps > 0.5).sum() <= 4, steps.max()
    assert m.outputs[0].quant.scale == np.float32(out_q[0])
