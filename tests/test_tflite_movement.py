"""The .tflite reader's PAD, PADV2, CONCATENATION, TRANSPOSE, RESIZE_NEAREST_NEIGHBOR and MEAN,
int8 and float, against TFLite Micro's interpreter (int8 bit-exact, float within 1e-5): one model
per op and option, odd shapes; the refusals are one line naming the operator."""

from __future__ import annotations

import numpy as np
import pytest
from every_variant import every_variant_passes
from test_tflite_import import OP, act8, actf, check, const, fb, model_bytes, operator, spread

from specializer.errors import UserError
from specializer.importers.tflite import read_tflite

Q = (0.07, 5)  # the int8 tensors' shared scale and zero point where the op copies bytes


def t(shape, float_model, name, q=Q):
    return actf(shape, name) if float_model else act8(shape, q[0], q[1], name)


def pad_model(float_model, paddings, shape=(1, 5, 3, 3), v2_value=None):
    out = tuple(s + a + b for s, (a, b) in zip(shape, paddings))
    x, y = t(shape, float_model, "x"), t(out, float_model, "y")
    p = const(np.array(paddings, np.int32), name="paddings")
    ins = [x, p]
    if v2_value is not None:
        ins.append(const(np.array([v2_value], np.float32)) if float_model else
                   me_int8_value(v2_value))
    code = OP.PADV2 if v2_value is not None else OP.PAD
    return model_bytes([operator(code, ins, [y])], [x], [y])


def me_int8_value(v):
    from tflite_micro.tensorflow.lite.micro.compression import model_editor as me
    return me.Tensor(shape=(1,), dtype=fb.TensorType.INT8, data=np.array([v], np.int8),
                     quantization=me.Quantization(Q[0], Q[1]), name="value")


def concat_model(float_model, shapes, axis, qs=None):
    qs = qs or [Q] * (len(shapes) + 1)
    ins = [t(s, float_model, f"x{k}", q) for k, (s, q) in enumerate(zip(shapes, qs))]
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    y = t(tuple(out), float_model, "y", qs[-1])
    o = fb.ConcatenationOptionsT()
    o.axis = axis
    return model_bytes([operator(OP.CONCATENATION, ins, [y], o, fb.BuiltinOptions.ConcatenationOptions)], ins, [y])


def transpose_model(float_model, shape, perm):
    x, y = t(shape, float_model, "x"), t(tuple(shape[p] for p in perm), float_model, "y")
    return model_bytes([operator(OP.TRANSPOSE, [x, const(np.array(perm, np.int32), name="perm")], [y])], [x], [y])


def resize_model(float_model, shape, size, align=False, half=False):
    x, y = t(shape, float_model, "x"), t((shape[0], *size, shape[3]), float_model, "y")
    o = fb.ResizeNearestNeighborOptionsT()
    o.alignCorners, o.halfPixelCenters = align, half
    return model_bytes([operator(OP.RESIZE_NEAREST_NEIGHBOR, [x, const(np.array(size, np.int32), name="size")], [y],
                                 o, fb.BuiltinOptions.ResizeNearestNeighborOptions)], [x], [y])


def mean_model(float_model, shape, axes, keep, in_q=(0.05, -7), out_q=(0.02, 3)):
    rank = len(shape)
    resolved = {a % rank for a in axes}
    out = tuple(1 if d in resolved else n for d, n in enumerate(shape) if keep or d not in resolved)
    x = actf(shape, "x") if float_model else act8(shape, *in_q, "x")
    y = actf(out, "y") if float_model else act8(out, *out_q, "y")
    o = fb.ReducerOptionsT()
    o.keepDims = keep
    return model_bytes([operator(OP.MEAN, [x, const(np.array(axes, np.int32), name="axes")], [y], o,
                                 fb.BuiltinOptions.ReducerOptions)], [x], [y])


CASES = {
    "pad_hw": lambda f: pad_model(f, [(0, 0), (1, 2), (0, 3), (0, 0)]),
    "pad_channels_and_batch": lambda f: pad_model(f, [(1, 0), (0, 0), (2, 1), (3, 2)]),
    "pad_2d": lambda f: pad_model(f, [(2, 1), (0, 4)], shape=(3, 5)),
    "padv2_value": lambda f: pad_model(f, [(0, 0), (1, 1), (1, 1), (0, 0)], v2_value=-3),
    "concat_channels": lambda f: concat_model(f, [(1, 4, 3, 5), (1, 4, 3, 2), (1, 4, 3, 7)], 3),
    "concat_negative_axis_2d": lambda f: concat_model(f, [(3, 5), (3, 1)], -1),
    "concat_height": lambda f: concat_model(f, [(1, 2, 3, 5), (1, 5, 3, 5)], 1),
    "transpose_nhwc_nchw": lambda f: transpose_model(f, (1, 4, 5, 3), (0, 3, 1, 2)),
    "transpose_3d": lambda f: transpose_model(f, (2, 3, 7), (2, 0, 1)),
    "resize_up2": lambda f: resize_model(f, (1, 3, 4, 5), (6, 8)),
    "resize_odd": lambda f: resize_model(f, (1, 5, 3, 2), (7, 11)),
    "resize_down": lambda f: resize_model(f, (1, 9, 8, 3), (4, 3)),
    "resize_align_corners": lambda f: resize_model(f, (1, 4, 5, 3), (7, 9), align=True),
    "resize_half_pixel": lambda f: resize_model(f, (1, 4, 5, 3), (7, 9), half=True),
    "resize_align_half_down": lambda f: resize_model(f, (1, 9, 7, 2), (4, 5), align=True, half=True),
    "mean_hw_keep": lambda f: mean_model(f, (1, 5, 7, 6), [1, 2], True),
    "mean_hw": lambda f: mean_model(f, (2, 6, 3, 5), [2, 1], False),
    "mean_last_negative": lambda f: mean_model(f, (3, 13), [-1], False),
    "mean_one_element_kept": lambda f: mean_model(f, (1, 1, 1, 9), [1, 2], True),
    "mean_big_count": lambda f: mean_model(f, (1, 33, 31, 2), [1, 2], True, in_q=(0.1, 0), out_q=(0.003, -20)),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("float_model", [False, True], ids=["int8", "float"])
def test_op_matches_tflite_micro(name, float_model, tmp_path):
    out = check(CASES[name](float_model), tmp_path)
    if not float_model and name.startswith("mean"):
        assert spread(out) >= 2  # the requantization is exercised, not only the clamp


def test_pad_fills_int8_with_the_output_zero_point(tmp_path):
    path = tmp_path / "p.tflite"
    path.write_bytes(pad_model(False, [(0, 0), (1, 0), (0, 0), (0, 0)], shape=(1, 1, 2, 1)))
    model = read_tflite(path)
    got = np.asarray(model(np.array([[[[7], [9]]]], np.int8)))
    assert got.ravel().tolist() == [Q[1], Q[1], 7, 9]


def refused(tmp_path, data) -> str:
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    with pytest.raises(UserError) as e:
        read_tflite(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("m.tflite: operator 0 (")
    return msg


def test_refusals_are_one_line(tmp_path):
    m = refused(tmp_path, concat_model(False, [(1, 3), (1, 2)], 1, qs=[Q, (0.1, 0), Q]))
    assert "input 1's quantization differs from the output's" in m
    m = refused(tmp_path, transpose_model(True, (2, 3), (0, 0)))
    assert "permutation [0, 0] is not one of the input's 2 dimensions" in m
    m = refused(tmp_path, mean_model(True, (2, 3), [2], False))
    assert "axes [2] are not dimensions of the input [2, 3]" in m
    # a pad value quantized unlike the output: TFLite Micro's Prepare refuses it too
    x, y = act8((1, 2), *Q, "x"), act8((1, 4), *Q, "y")
    from tflite_micro.tensorflow.lite.micro.compression import model_editor as me
    v = me.Tensor(shape=(1,), dtype=fb.TensorType.INT8, data=np.array([1], np.int8),
                  quantization=me.Quantization(0.5, 0), name="value")
    m = refused(tmp_path, model_bytes([operator(OP.PADV2, [x, const(np.array([[0, 0], [1, 1]], np.int32)), v], [y])],
                                      [x], [y]))
    assert "the pad value's quantization differs from the output's" in m


def network(rng, float_model) -> bytes:
    """A user's model: CONV_2D (stride 2, ReLU) -> two RESIZE_NEAREST_NEIGHBOR x2 (plain and
    half-pixel) -> CONCATENATION -> PAD -> MEAN over H, W -> TRANSPOSE to NCHW."""
    from test_tflite_import import ACT, conv_options, out_scale, rand8

    in_s, ws = 0.05, rng.uniform(0.5, 2.0, 6) / 127
    s1 = out_scale(in_s, ws.mean(), 18) / 8
    q1, q2 = (s1, -100), (s1 / 6, -40)

    def ten(shape, name, q):
        return actf(shape, name) if float_model else act8(shape, q[0], q[1], name)

    x = actf((1, 8, 8, 2), "x") if float_model else act8((1, 8, 8, 2), in_s, 3, "x")
    e = ten((1, 4, 4, 6), "e", q1)
    u1, u2 = ten((1, 8, 8, 6), "u1", q1), ten((1, 8, 8, 6), "u2", q1)
    cat, padded = ten((1, 8, 8, 12), "cat", q1), ten((1, 10, 9, 12), "padded", q1)
    m, y = ten((1, 1, 1, 12), "m", q2), ten((1, 12, 1, 1), "y", q2)
    if float_model:
        w = const(rng.normal(size=(6, 3, 3, 2)).astype(np.float32), name="w")
        b = const(rng.normal(size=6).astype(np.float32), name="b")
    else:
        w = const(rand8(rng, (6, 3, 3, 2), -127), ws, 0, "w")
        b = const(rng.integers(-800, 800, 6).astype(np.int32), in_s * ws, 0, "b")
    size = const(np.array([8, 8], np.int32), name="size")
    r1, r2 = fb.ResizeNearestNeighborOptionsT(), fb.ResizeNearestNeighborOptionsT()
    r2.halfPixelCenters = True
    co, mo = fb.ConcatenationOptionsT(), fb.ReducerOptionsT()
    co.axis, mo.keepDims = 3, True
    ops = [operator(OP.CONV_2D, [x, w, b], [e], *conv_options(stride=(2, 2), act=ACT.RELU)),
           operator(OP.RESIZE_NEAREST_NEIGHBOR, [e, size], [u1], r1, fb.BuiltinOptions.ResizeNearestNeighborOptions),
           operator(OP.RESIZE_NEAREST_NEIGHBOR, [e, size], [u2], r2, fb.BuiltinOptions.ResizeNearestNeighborOptions),
           operator(OP.CONCATENATION, [u1, u2], [cat], co, fb.BuiltinOptions.ConcatenationOptions),
           operator(OP.PAD, [cat, const(np.array([[0, 0], [1, 1], [0, 1], [0, 0]], np.int32), name="p")], [padded]),
           operator(OP.MEAN, [padded, const(np.array([1, 2], np.int32), name="axes")], [m], mo,
                    fb.BuiltinOptions.ReducerOptions),
           operator(OP.TRANSPOSE, [m, const(np.array([0, 3, 1, 2], np.int32), name="perm")], [y])]
    return model_bytes(ops, [x], [y])


@pytest.mark.parametrize("float_model", [False, True], ids=["int8", "float"])
def test_network_in_every_variant_equal_to_tflite_micro(float_model, tmp_path):
    from test_tflite_import import Tflm

    from specializer.capture.capture import capture

    path = tmp_path / "net.tflite"
    data = network(np.random.default_rng(21), float_model)
    path.write_bytes(data)
    c = capture(path, None, tmp_path / "cap")
    x = c.manifest.inputs[0].array()
    (want,), _ = Tflm(data).run([x], 1)
    got = c.manifest.outputs[0].array()
    if float_model:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    else:
        np.testing.assert_array_equal(got, want)  # the reference outputs are TFLite Micro's
        assert spread(got) >= 4
    every_variant_passes(c.model_ll, tmp_path, exact=not float_model)


@pytest.mark.parametrize("code", ["LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU"])
def test_float_activations_match_tflite_micro(code, tmp_path):
    """The float reader's activations within 1e-5 of TFLite Micro's float kernels (N(0, 2) inputs:
    both tails and the bends of HARD_SWISH and LEAKY_RELU)."""
    x, y = actf((2, 5, 7), "x"), actf((2, 5, 7), "y")
    opts = ()
    if code == "LEAKY_RELU":
        o = fb.LeakyReluOptionsT()
        o.alpha = 0.15
        opts = (o, fb.BuiltinOptions.LeakyReluOptions)
    check(model_bytes([operator(getattr(OP, code), [x], [y], *opts)], [x], [y]), tmp_path, n=4)
