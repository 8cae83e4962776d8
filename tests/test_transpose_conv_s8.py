"""int8 transposed convolution (TFLite's TRANSPOSE_CONV, CMSIS-NN's arm_transpose_conv_s8): the
block (specializer.quant.blocks.transpose_conv2d), the shim's function on the host, and the
call capture lowers it onto, against a scatter written from TFLite's reference kernel (each
input pixel adds its filter-weighted values at out = in * stride - pad + k). TFLite Micro's own
kernel is the oracle in tests/test_tflite_import.py (the reader's blocks, bit-exact) and
tests/test_tflite_capture.py (every variant on QEMU)."""

from __future__ import annotations

import ctypes

import jax
import numpy as np
import pytest
from test_cmsis_nn import (Activation, Context, Dims, PerChannel, STRUCT, Tile, finish, host,  # noqa: F401
                           nn_call, ptr, quant)

from every_variant import captured_source, model_namespace

from specializer.capture import cmsis_calls
from specializer.quant import blocks
from specializer.quant.params import TransposeConvParams

TConvParams = STRUCT["cmsis_nn_transpose_conv_params"]

# batch, in (h, w), cin, cout, k (h, w), stride (h, w), padding (h, w), out (h, w), bias, activation
CASES = {
    "same_stride2": (1, (4, 5), 3, 5, (3, 3), (2, 2), (1, 1), (8, 10), True, (-128, 127)),
    "valid_stride2_k4": (1, (3, 4), 5, 7, (4, 4), (2, 2), (0, 0), (8, 10), True, (-128, 127)),
    "stride3_odd_channels": (2, (3, 3), 7, 9, (3, 2), (3, 3), (1, 0), (9, 8), False, (-128, 127)),
    "stride_2x1": (1, (4, 6), 6, 3, (4, 3), (2, 1), (1, 1), (8, 6), True, (-20, 90)),
    "stride1": (1, (5, 5), 4, 4, (3, 3), (1, 1), (1, 1), (5, 5), True, (-128, 127)),
    "pad_beyond_filter": (1, (5, 4), 2, 3, (2, 2), (2, 2), (3, 2), (4, 3), True, (-128, 127)),
    "one_channel": (1, (6, 2), 1, 1, (3, 3), (2, 2), (1, 1), (11, 3), True, (-128, 127)),
}


def case_data(name, seed=0):
    n, (ih, iw), cin, cout, k, stride, pad, out, bias, act = CASES[name]
    rng = np.random.default_rng(seed)
    mult, _ = quant(rng, cout)
    # an accumulator sums about kh*kw*cin / (sh*sw) products of +-128 * 128: shifted to +-64
    depth = max(k[0] * k[1] * cin / (stride[0] * stride[1]), 1)
    shift = -int(8 + np.log2(depth) / 2) + rng.integers(-1, 1, cout)
    p = TransposeConvParams(input_dims=(n, ih, iw, cin), filter_dims=(cout, *k, cin), output_dims=(n, *out, cout),
                            stride=stride, padding=pad, input_offset=int(rng.integers(-127, 129)),
                            output_offset=int(rng.integers(-128, 128)), activation=act,
                            multipliers=tuple(int(m) for m in mult), shifts=tuple(int(s) for s in shift))
    x = rng.integers(-128, 128, p.input_dims, dtype=np.int8)
    w = rng.integers(-127, 128, p.filter_dims, dtype=np.int8)
    b = rng.integers(-20000, 20000, cout).astype(np.int32) if bias else None
    return p, x, w, b


def scatter(p, x, w, b):
    """TFLite's reference TransposeConv, read literally (int64 sums)."""
    n, ih, iw, cin = p.input_dims
    cout, kh, kw, _ = p.filter_dims
    _, oh, ow, _ = p.output_dims
    acc = np.zeros((n, oh, ow, cout), np.int64)
    xs = x.astype(np.int64) + p.input_offset
    for iy in range(ih):
        for ix in range(iw):
            for ky in range(kh):
                for kx in range(kw):
                    oy, ox = iy * p.stride[0] - p.padding[0] + ky, ix * p.stride[1] - p.padding[1] + kx
                    if 0 <= oy < oh and 0 <= ox < ow:
                        acc[:, oy, ox, :] += xs[:, iy, ix, :] @ w[:, ky, kx, :].astype(np.int64).T
    return finish(acc, b, np.array(p.multipliers, np.int32), np.array(p.shifts, np.int32), p.output_offset,
                  p.activation)


def run_shim(lib, p, x, w, b):
    lib.arm_transpose_conv_s8.restype = lib.arm_transpose_conv_s8_get_buffer_size.restype = ctypes.c_int32
    params = TConvParams(input_offset=p.input_offset, output_offset=p.output_offset,
                         stride=Tile(w=p.stride[1], h=p.stride[0]), padding=Tile(w=p.padding[1], h=p.padding[0]),
                         padding_offsets=Tile(w=0, h=0), dilation=Tile(w=1, h=1),
                         activation=Activation(min=p.activation[0], max=p.activation[1]))
    in_dims, f_dims, out_dims = Dims(*p.input_dims), Dims(*p.filter_dims), Dims(*p.output_dims)
    size = nn_call(lib, "arm_transpose_conv_s8_get_buffer_size", transpose_conv_params=ctypes.byref(params),
                   input_dims=ctypes.byref(in_dims), filter_dims=ctypes.byref(f_dims), out_dims=ctypes.byref(out_dims))
    assert size == cmsis_calls.transpose_conv_s8_buffer_size(p.to_dict())
    buf = np.zeros(size // 4 + 1, np.int32)
    mult, shift = np.array(p.multipliers, np.int32), np.array(p.shifts, np.int32)
    out = np.full(p.output_dims, 99, np.int8)
    st = nn_call(lib, "arm_transpose_conv_s8", ctx=ctypes.byref(Context(buf=buf.ctypes.data, size=size)),
                 output_ctx=ctypes.byref(Context(buf=None, size=0)), transpose_conv_params=ctypes.byref(params),
                 quant_params=ctypes.byref(PerChannel(multiplier=mult.ctypes.data, shift=shift.ctypes.data)),
                 input_dims=ctypes.byref(in_dims), input_data=ptr(x), filter_dims=ctypes.byref(f_dims),
                 filter_data=ptr(w), bias_dims=ctypes.byref(Dims(1, 1, 1, p.filter_dims[0])), bias_data=ptr(b),
                 output_dims=ctypes.byref(out_dims), output_data=ptr(out))
    assert st == 0
    return out


@pytest.mark.parametrize("name", CASES)
def test_block_equals_tflite_reference(name):
    p, x, w, b = case_data(name)
    got = np.asarray(jax.jit(lambda a, f, c: blocks.transpose_conv2d(a, f, c, p))(x, w, b))
    want = scatter(p, x, w, b).reshape(p.output_dims)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) > min(20, got.size // 2)  # the arithmetic, not the clamp


@pytest.mark.parametrize("name", CASES)
def test_shim_equals_tflite_reference(host, name):
    p, x, w, b = case_data(name, seed=1)
    np.testing.assert_array_equal(run_shim(host, p, x, w, b), scatter(p, x, w, b).reshape(p.output_dims))


@pytest.mark.parametrize("name", CASES)
def test_mac_count_is_the_products_landing_in_the_output(name):
    """TransposeConvParams.macs (the layer table's count) is the number of products the scatter
    adds into the output; report/macs.py's count of the lowered call is checked against the same
    arithmetic on a captured model (test_tflite_capture.py)."""
    p, *_ = case_data(name)
    landing = sum(0 <= iy * p.stride[0] - p.padding[0] + ky < p.output_dims[1]
                  and 0 <= ix * p.stride[1] - p.padding[1] + kx < p.output_dims[2]
                  for iy in range(p.input_dims[1]) for ix in range(p.input_dims[2])
                  for ky in range(p.filter_dims[1]) for kx in range(p.filter_dims[2]))
    assert p.macs() == landing * p.input_dims[0] * p.input_dims[3] * p.filter_dims[0]


def test_shim_refuses_a_filter_of_other_channels(host):
    p, x, w, b = case_data("same_stride2")
    bad = TransposeConvParams(**{**p.__dict__, "filter_dims": (5, 3, 3, 3)})
    host.arm_transpose_conv_s8.restype = ctypes.c_int32
    params = TConvParams(stride=Tile(w=2, h=2))
    st = nn_call(host, "arm_transpose_conv_s8", ctx=ctypes.byref(Context(buf=None, size=0)),
                 output_ctx=ctypes.byref(Context(buf=None, size=0)), transpose_conv_params=ctypes.byref(params),
                 quant_params=None, input_dims=ctypes.byref(Dims(1, 4, 5, 2)), input_data=ptr(x),
                 filter_dims=ctypes.byref(Dims(*bad.filter_dims)), filter_data=ptr(w), bias_dims=None, bias_data=None,
                 output_dims=ctypes.byref(Dims(*p.output_dims)), output_data=None)
    assert st == -1  # ARM_CMSIS_NN_ARG_ERROR: C_IN 2 against the filter's 3


def test_params_refuse_what_tflite_cannot_mean():
    p, *_ = case_data("same_stride2")
    with pytest.raises(ValueError, match="padding"):
        TransposeConvParams(**{**p.__dict__, "padding": (-1, 0)})
    with pytest.raises(ValueError, match="does not take"):
        TransposeConvParams(**{**p.__dict__, "output_dims": (1, 8, 10, 4)})


# ---------------------------------------------------------------- quantize(): lax.conv_transpose

# a conv autoencoder as a user writes one, as a model file: a strided conv encoder, a
# conv_transpose decoder (SAME, then VALID to 26x26), biases and ReLUs, odd channel counts
AUTOENCODER = """
import jax
import numpy as np
from jax import lax

from specializer.quant.ptq import quantize

DN = ("NHWC", "HWIO", "NHWC")


def float_ae(x, e1, c1, d1, c2, d2):
    h = jax.nn.relu(lax.conv_general_dilated(x, e1, (2, 2), "SAME", dimension_numbers=DN) + c1)
    h = jax.nn.relu(lax.conv_transpose(h, d1, (2, 2), "SAME", dimension_numbers=DN) + c2)
    return lax.conv_transpose(h, d2, (2, 2), "VALID", dimension_numbers=DN)


rng = np.random.default_rng(0)
W = {"e1": (rng.standard_normal((3, 3, 1, 6)) * 0.5).astype(np.float32),
     "c1": (rng.standard_normal(6) * 0.1).astype(np.float32),
     "d1": (rng.standard_normal((3, 3, 6, 5)) * 0.3).astype(np.float32),
     "c2": (rng.standard_normal(5) * 0.1).astype(np.float32),
     "d2": (rng.standard_normal((4, 4, 5, 3)) * 0.3).astype(np.float32)}
calibration = [{"x": rng.uniform(0, 1, (1, 12, 12, 1)).astype(np.float32)} for _ in range(16)]
conv_ae_int8, params = quantize(float_ae, W, calibration, name="conv_ae_int8")
conv_ae_int8.example_inputs = {"x": conv_ae_int8.inputs["x"].quantize(calibration[0]["x"])}
conv_ae_int8.weights = params
"""


def quantized_autoencoder() -> dict:
    return model_namespace(AUTOENCODER, "conv_ae_int8.py")


def test_quantize_makes_conv_transpose_the_int8_block():
    ns = quantized_autoencoder()
    model, qp, w, rng = ns["conv_ae_int8"], ns["params"], ns["W"], np.random.default_rng(1)
    assert [s.kind for s in model.steps] == ["conv", "tconv", "tconv"]
    t1, t2 = model.steps[1].block, model.steps[2].block
    # SAME with a 3x3 filter at stride 2: XLA pads the stuffed input (2, 1) -> TFLite padding 0;
    # VALID with 4x4: XLA pads (3, 3) -> 0
    assert (t1.stride, t1.padding, t1.output_dims) == ((2, 2), (0, 0), (1, 12, 12, 5))
    assert (t2.filter_dims, t2.padding, t2.output_dims) == ((3, 4, 4, 5), (0, 0), (1, 26, 26, 3))
    assert t1.activation[0] == t1.output_offset  # the ReLU folded into the clamp
    for _ in range(4):
        x = rng.uniform(0, 1, (1, 12, 12, 1)).astype(np.float32)
        ref = np.asarray(ns["float_ae"](x, **w))
        got = model.run_float(qp, x=x)
        assert got.shape == ref.shape
        # the same picture (a reversed or shifted filter is not), within about a step on average
        # (min/max calibration on 16 inputs clips a few values of others)
        assert np.corrcoef(got.ravel(), ref.ravel())[0, 1] > 0.999
        assert np.abs(got - ref).mean() <= 1.5 * model.outputs[0].scale


def test_quantize_refuses_a_transposed_padding_tflite_cannot_hold():
    from jax import lax

    from specializer.quant.graph import QuantizeError
    from specializer.quant.ptq import quantize

    def up(x, w):  # low padding 3 > k - 1 = 2: the output starts before the first input pixel
        return lax.conv_transpose(x, w, (2, 2), ((3, 3), (3, 3)), dimension_numbers=("NHWC", "HWIO", "NHWC"))

    w = {"w": np.ones((3, 3, 2, 2), np.float32)}
    with pytest.raises(QuantizeError, match="padding .* would be negative"):
        quantize(up, w, [{"x": np.ones((1, 4, 4, 2), np.float32)}])


@pytest.mark.slow  # about 20 s on QEMU; the .tflite decoder runs in every variant in the default suite
def test_quantized_autoencoder_in_every_variant(tmp_path):
    from specializer import inputs
    from specializer.driver.compare import compare
    from specializer.optimize import variants

    c = captured_source(AUTOENCODER, "conv_ae_int8", tmp_path)
    assert sum("onto arm_transpose_conv_s8" in line for line in c.log) == 2
    comp = compare(inputs.load(c.model_ll), tmp_path / "cmp", variants.Options.of(unroll_candidates=()))
    for r in comp.rows:
        assert r.status == "pass", (r.variant, r)
        assert r.max_abs_err == 0, r.variant
