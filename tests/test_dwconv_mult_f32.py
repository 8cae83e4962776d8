"""libjit_dwconv_mult_f32 (libkernels/dwconv_mult_f32.c): depthwise convolution with channel
multiplier 2 or 4. Built for the host with gcc and called through ctypes against a float64
convolution and against libjit_conv2d_f32 (same tap order: the same floats, bit for bit); capture
sends a multiplier-2 or -4 depthwise conv there and leaves others on libjit_conv2d_f32; a user's
model with one runs in every variant on QEMU."""

import ctypes

import numpy as np
import pytest
from every_variant import every_variant_passes
from test_kernels_f32 import SENTINEL, _check, _guarded, _ptr, conv_ref, host_library


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so_lib = host_library(tmp_path_factory.mktemp("dwmult_f32"), "dwconv_mult_f32.c")
    p, i = ctypes.c_void_p, ctypes.c_int32
    so_lib.libjit_dwconv_mult_f32.argtypes = [p, p, p] + [i] * 15
    so_lib.libjit_dwconv_mult_f32.restype = None
    return so_lib


# batch, in (h, w), in_c, mult, k (h, w), stride (h, w), padding (top, left), out (h, w), dilation
CASES = {
    "m2_odd7_3x3_same": (1, (9, 10), 7, 2, (3, 3), (1, 1), (1, 1), (9, 10), (1, 1)),
    "m2_even8_3x3_same": (1, (6, 7), 8, 2, (3, 3), (1, 1), (1, 1), (6, 7), (1, 1)),
    "m2_stride2": (1, (9, 9), 5, 2, (3, 3), (2, 2), (1, 1), (5, 5), (1, 1)),
    "m2_one_channel": (2, (5, 6), 1, 2, (3, 3), (1, 1), (1, 1), (5, 6), (1, 1)),
    "m2_5x5_valid": (1, (8, 9), 3, 2, (5, 5), (1, 1), (0, 0), (4, 5), (1, 1)),
    "m2_dilated": (1, (9, 9), 3, 2, (3, 3), (1, 1), (2, 2), (9, 9), (2, 2)),
    "m2_pad_beyond": (1, (2, 3), 3, 2, (3, 3), (1, 1), (2, 2), (4, 5), (1, 1)),
    "m2_1d": (1, (1, 11), 6, 2, (1, 4), (1, 2), (0, 1), (1, 5), (1, 1)),
    "m4_odd3": (1, (7, 8), 3, 4, (3, 3), (1, 1), (1, 1), (7, 8), (1, 1)),
    "m4_stride2_asym": (2, (8, 7), 5, 4, (3, 2), (2, 1), (1, 0), (4, 6), (1, 1)),
}


def run(lib, case, seed=0):
    batch, (ih, iw), in_c, mult, (kh, kw), stride, pads, (oh, ow), dil = case
    out_c = in_c * mult
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, ih, iw, in_c)).astype(np.float32)
    w = rng.standard_normal((kh, kw, 1, out_c)).astype(np.float32)
    n = batch * oh * ow * out_c
    got, general = _guarded(n), _guarded(n)
    lib.libjit_dwconv_mult_f32(_ptr(got), _ptr(x), _ptr(w), batch, ih, iw, in_c, oh, ow, out_c, kh, kw,
                               *stride, *pads, *dil)
    lib.libjit_conv2d_f32(_ptr(general), _ptr(x), _ptr(w), None, batch, ih, iw, in_c, oh, ow, out_c, kh, kw,
                          *stride, *pads, *dil, in_c)
    assert (got[n:] == SENTINEL).all(), "wrote past the output"
    shape = (batch, oh, ow, out_c)
    return x, w, got[:n].reshape(shape), general[:n].reshape(shape)


@pytest.mark.parametrize("name", CASES)
def test_against_float64_and_the_general_kernel(lib, name):
    case = CASES[name]
    x, w, got, general = run(lib, case)
    _, _, _, _, _, stride, pads, out_hw, dil = case
    ref, bound = conv_ref(x.astype(np.float64), w, stride, pads, out_hw, dil, x.shape[-1])
    _check(got, ref, bound)
    # the same taps in the same order: libjit_conv2d_f32's floats exactly
    assert np.array_equal(got.view(np.uint32), general.view(np.uint32))


DW_MODEL = '''
import jax
import numpy as np
from jax import lax

DN = ("NHWC", "HWIO", "NHWC")


def dw_mult(x, d2, p, d4):
    h = jax.nn.relu(lax.conv_general_dilated(x, d2, (1, 1), "SAME", dimension_numbers=DN, feature_group_count=7))
    h = lax.conv_general_dilated(h, p, (1, 1), "VALID", dimension_numbers=DN)
    h = lax.conv_general_dilated(h, d4, (2, 2), "SAME", dimension_numbers=DN, feature_group_count=3)
    m3 = lax.conv_general_dilated(h, np.ones((3, 3, 1, 36), np.float32) * 0.1, (1, 1), "SAME",
                                  dimension_numbers=DN, feature_group_count=12)
    return jax.nn.tanh(m3)


rng = np.random.default_rng(3)
dw_mult.example_inputs = {"x": rng.standard_normal((1, 10, 9, 7)).astype(np.float32)}
dw_mult.weights = {
    "d2": (rng.standard_normal((3, 3, 1, 14)) * 0.4).astype(np.float32),
    "p": (rng.standard_normal((1, 1, 14, 3)) * 0.3).astype(np.float32),
    "d4": (rng.standard_normal((3, 3, 1, 12)) * 0.4).astype(np.float32),
}
'''


@pytest.fixture(scope="module")
def dw_model(tmp_path_factory):
    from specializer.capture.capture import capture

    d = tmp_path_factory.mktemp("dw_mult")
    (d / "dw_mult.py").write_text(DW_MODEL)
    return capture(d / "dw_mult.py", "dw_mult", d / "out")


def test_capture_sends_multipliers_2_and_4_to_the_kernel(dw_model):
    from specializer.llvm.irtext import direct_calls
    from specializer.report import macs

    text = dw_model.model_ll.read_text()
    lines = text.split("\n")
    calls = [c.ints(3, 15) for c in direct_calls(lines, ("libjit_dwconv_mult_f32",))]
    # batch, in h w c, out h w c, k h w, stride h w, pad top left, dilation h w
    assert calls == [[1, 10, 9, 7, 10, 9, 14, 3, 3, 1, 1, 1, 1, 1, 1],
                     [1, 10, 9, 3, 5, 5, 12, 3, 3, 2, 2, 0, 1, 1, 1]]  # SAME at stride 2: 10 rows pad 0 above
    # the multiplier-3 depthwise stays on the general kernel (XLA makes the pointwise conv a dot)
    assert [c.ints(19, 1) for c in direct_calls(lines, ("libjit_conv2d_f32",))] == [[12]]
    assert macs.count(text) == 10 * 9 * 14 * 9 + 10 * 9 * 3 * 14 + 5 * 5 * 12 * 9 + 5 * 5 * 36 * 9


def test_model_in_every_variant(dw_model, tmp_path):

    every_variant_passes(dw_model.model_ll, tmp_path, exact=False)
