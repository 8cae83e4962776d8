"""libjit_conv_transpose2d_f32 (libkernels/conv_transpose2d_f32.c): a convolution of a dilated
input, XLA's form of a transposed convolution. Built for the host with gcc and called through
ctypes against two references: the input zero-stuffed explicitly and convolved in float64 (the
header's formula read literally), and XLA's own lax.conv_general_dilated / lax.conv_transpose."""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest
from test_kernels_f32 import SENTINEL, _check, _guarded, _ptr, conv_ref

from specializer.tools import repo_root


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no host gcc")
    src = repo_root() / "libkernels"
    so = tmp_path_factory.mktemp("tconv_f32") / "libtconv.so"
    r = subprocess.run([gcc, "-O2", "-std=c11", "-Wall", "-Werror", "-fPIC", "-shared", "-ffp-contract=off",
                        f"-I{src}", str(src / "conv_transpose2d_f32.c"), "-o", str(so)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    so_lib = ctypes.CDLL(str(so))
    p, i = ctypes.c_void_p, ctypes.c_int32
    so_lib.libjit_conv_transpose2d_f32.argtypes = [p, p, p] + [i] * 19
    so_lib.libjit_conv_transpose2d_f32.restype = None
    return so_lib


# batch, in (h, w), in_c, out_c, k (h, w), stride (h, w), padding (top, bottom, left, right),
# dilation (h, w), groups, base dilation (h, w), reverse bits
CASES = {
    # what lax.conv_transpose(..., (2, 2), 'SAME') gives a 3x3 filter
    "up2_3x3_same": (1, (4, 5), 3, 5, (3, 3), (1, 1), (1, 2, 1, 2), (1, 1), 1, (2, 2), 0),
    "up2_4x4_valid": (2, (3, 3), 6, 7, (4, 4), (1, 1), (3, 3, 3, 3), (1, 1), 1, (2, 2), 0),
    "up3_odd_channels": (1, (3, 4), 5, 13, (3, 2), (1, 1), (2, 2, 1, 1), (1, 1), 1, (3, 3), 0),
    "reversed_both": (1, (5, 4), 4, 6, (3, 3), (1, 1), (2, 2, 2, 2), (1, 1), 1, (2, 2), 3),
    "reversed_rows_only": (1, (4, 4), 3, 4, (3, 2), (1, 1), (1, 1, 0, 1), (1, 1), 1, (2, 1), 1),
    "negative_padding": (1, (6, 6), 4, 3, (3, 3), (1, 1), (-1, 0, -2, 1), (1, 1), 1, (2, 2), 0),
    "asym_dilations": (2, (4, 7), 3, 4, (2, 3), (1, 1), (1, 0, 2, 2), (1, 1), 1, (1, 3), 2),
    "with_window_dilation": (1, (5, 5), 2, 5, (3, 3), (1, 1), (2, 2, 2, 2), (2, 1), 1, (2, 2), 0),
    "strided_too": (1, (6, 5), 3, 4, (3, 3), (2, 1), (2, 1, 1, 1), (1, 1), 1, (2, 2), 0),
    "groups2": (1, (4, 4), 4, 6, (3, 3), (1, 1), (1, 2, 1, 2), (1, 1), 2, (2, 2), 0),
    "depthwise": (1, (5, 3), 5, 5, (3, 3), (1, 1), (2, 2, 2, 2), (1, 1), 5, (2, 2), 0),
    "one_channel_1d": (2, (1, 9), 1, 3, (1, 4), (1, 1), (0, 0, 2, 2), (1, 1), 1, (1, 2), 2),
    "pad_beyond_input": (1, (2, 2), 3, 2, (3, 3), (1, 1), (4, 4, 3, 5), (1, 1), 1, (2, 3), 0),
}


def _out_size(size, k, s, lo, hi, d, bd):
    return ((size - 1) * bd + 1 + lo + hi - ((k - 1) * d + 1)) // s + 1


def _shapes(case):
    batch, (ih, iw), in_c, out_c, (kh, kw), stride, pads, dil, groups, bdil, rev = case
    oh = _out_size(ih, kh, stride[0], pads[0], pads[1], dil[0], bdil[0])
    ow = _out_size(iw, kw, stride[1], pads[2], pads[3], dil[1], bdil[1])
    return oh, ow


def run(lib, case, seed=0):
    batch, (ih, iw), in_c, out_c, (kh, kw), stride, pads, dil, groups, bdil, rev = case
    oh, ow = _shapes(case)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, ih, iw, in_c)).astype(np.float32)
    w = rng.standard_normal((kh, kw, in_c // groups, out_c)).astype(np.float32)
    n = batch * oh * ow * out_c
    out = _guarded(n)
    lib.libjit_conv_transpose2d_f32(_ptr(out), _ptr(x), _ptr(w), batch, ih, iw, in_c, oh, ow, out_c, kh, kw,
                                    stride[0], stride[1], pads[0], pads[2], dil[0], dil[1], groups,
                                    bdil[0], bdil[1], rev)
    assert (out[n:] == SENTINEL).all(), "wrote past the output"
    return x, w, out[:n].reshape(batch, oh, ow, out_c)


def stuffed_ref(x, w, case):
    """The input zero-stuffed, low padding applied (cropping where negative), the filter flipped
    where reversed, then an ordinary float64 convolution."""
    batch, (ih, iw), in_c, out_c, (kh, kw), stride, pads, dil, groups, bdil, rev = case
    xd = np.zeros((batch, (ih - 1) * bdil[0] + 1, (iw - 1) * bdil[1] + 1, in_c))
    xd[:, ::bdil[0], ::bdil[1], :] = x
    pt, pl = pads[0], pads[2]
    xd = xd[:, max(-pt, 0):, max(-pl, 0):, :]
    wf = w[::-1] if rev & 1 else w
    wf = wf[:, ::-1] if rev & 2 else wf
    return conv_ref(xd, np.ascontiguousarray(wf), stride, (max(pt, 0), max(pl, 0)), _shapes(case), dil, groups)


@pytest.mark.parametrize("name", CASES)
def test_against_zero_stuffed_input(lib, name):
    x, w, got = run(lib, CASES[name])
    ref, bound = stuffed_ref(x.astype(np.float64), w, CASES[name])
    _check(got, ref, bound)


@pytest.mark.parametrize("name", ["up2_3x3_same", "reversed_both", "negative_padding", "groups2",
                                  "with_window_dilation", "strided_too"])
def test_matches_xla(lib, name):
    """The header's reading of base dilation and reversal is XLA's."""
    lax = pytest.importorskip("jax.lax")
    case = CASES[name]
    batch, _, _, _, _, stride, pads, dil, groups, bdil, rev = case
    x, w, got = run(lib, case, seed=1)
    wf = w[::-1] if rev & 1 else w
    wf = wf[:, ::-1] if rev & 2 else wf  # XLA's window reversal, as the rev op it folds
    want = np.asarray(lax.conv_general_dilated(
        x, np.ascontiguousarray(wf), stride, [(pads[0], pads[1]), (pads[2], pads[3])], lhs_dilation=bdil,
        rhs_dilation=dil, dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=groups,
        precision=lax.Precision.HIGHEST))
    assert want.shape == got.shape
    _, bound = stuffed_ref(x.astype(np.float64), w, case)
    _check(got, want.astype(np.float64), bound, rtol=3e-5)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("strides,k", [((2, 2), (3, 3)), ((2, 1), (4, 3)), ((3, 2), (2, 2))])
def test_lax_conv_transpose(lib, padding, strides, k):
    """A user's lax.conv_transpose, in the XLA form JAX gives it (lhs dilation = strides)."""
    lax = pytest.importorskip("jax.lax")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 5, 4, 3)).astype(np.float32)
    w = rng.standard_normal((*k, 3, 6)).astype(np.float32)
    want = np.asarray(lax.conv_transpose(x, w, strides, padding, dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                         precision=lax.Precision.HIGHEST))
    from jax._src.lax.convolution import _conv_transpose_padding
    pads = [_conv_transpose_padding(kk, s, padding) for kk, s in zip(k, strides)]
    case = (1, (5, 4), 3, 6, k, (1, 1), (*pads[0], *pads[1]), (1, 1), 1, strides, 0)
    oh, ow = _shapes(case)
    assert (oh, ow) == want.shape[1:3]
    out = _guarded(want.size)
    lib.libjit_conv_transpose2d_f32(_ptr(out), _ptr(x), _ptr(w), 1, 5, 4, 3, oh, ow, 6, *k, 1, 1,
                                    pads[0][0], pads[1][0], 1, 1, 1, *strides, 0)
    assert (out[want.size:] == SENTINEL).all()
    _, bound = stuffed_ref(x.astype(np.float64), w, case)
    _check(out[:want.size].reshape(want.shape), want.astype(np.float64), bound, rtol=3e-5)


@pytest.mark.parametrize("name", CASES)
def test_mac_count_is_the_products_on_real_input_pixels(name):
    """report/macs.py counts what the kernel multiplies: ones in, ones as weights, every output
    value is the number of its products on real input pixels."""
    from specializer.report.macs import transposed_conv_macs

    case = CASES[name]
    batch, (ih, iw), in_c, out_c, (kh, kw), stride, pads, dil, groups, bdil, rev = case
    ones, _ = stuffed_ref(np.ones((batch, ih, iw, in_c)), np.ones((kh, kw, in_c // groups, out_c), np.float32), case)
    oh, ow = _shapes(case)
    assert transposed_conv_macs(batch, ih, iw, in_c, oh, ow, out_c, kh, kw, *stride, pads[0], pads[2], *dil, groups,
                                *bdil, rev) == int(ones.sum())


# A convolutional autoencoder as a user writes one: a strided encoder, a conv_transpose decoder
# (the last with transpose_kernel=True), odd channel counts.
AUTOENCODER = '''
import jax
import numpy as np
from jax import lax

DN = ("NHWC", "HWIO", "NHWC")


def conv_ae(x, e1, e2, d1, d2, b1):
    h = jax.nn.relu(lax.conv_general_dilated(x, e1, (2, 2), "SAME", dimension_numbers=DN))
    h = jax.nn.relu(lax.conv_general_dilated(h, e2, (2, 2), "SAME", dimension_numbers=DN))
    h = jax.nn.relu(lax.conv_transpose(h, d1, (2, 2), "SAME", dimension_numbers=DN) + b1)
    return jax.nn.sigmoid(lax.conv_transpose(h, d2, (2, 2), "VALID", dimension_numbers=DN, transpose_kernel=True))


rng = np.random.default_rng(0)
conv_ae.example_inputs = {"x": rng.uniform(0, 1, (1, 12, 12, 1)).astype(np.float32)}
conv_ae.weights = {
    "e1": (rng.standard_normal((3, 3, 1, 6)) * 0.5).astype(np.float32),
    "e2": (rng.standard_normal((3, 3, 6, 9)) * 0.3).astype(np.float32),
    "d1": (rng.standard_normal((3, 3, 9, 7)) * 0.3).astype(np.float32),
    "d2": (rng.standard_normal((4, 4, 1, 7)) * 0.3).astype(np.float32),
    "b1": (rng.standard_normal(7) * 0.1).astype(np.float32),
}
'''


@pytest.fixture(scope="module")
def autoencoder(tmp_path_factory):
    from specializer.capture.capture import capture

    d = tmp_path_factory.mktemp("conv_ae")
    (d / "conv_ae.py").write_text(AUTOENCODER)
    return capture(d / "conv_ae.py", "conv_ae", d / "out")


def test_capture_lowers_conv_transpose_onto_the_kernel(autoencoder):
    from specializer.llvm.irtext import direct_calls

    lines = autoencoder.model_ll.read_text().split("\n")
    calls = [c.ints(3, 19) for c in direct_calls(lines, ("libjit_conv_transpose2d_f32",))]
    # batch, in h w c, out h w c, k h w, stride h w, pad top left, dilation h w, groups, base dilation
    # h w, reverse: 3x3x9 -> 6x6x7, 3x3 SAME (padding 2 before); 6x6x7 -> 14x14x1, 4x4 VALID (3)
    assert calls == [[1, 3, 3, 9, 6, 6, 7, 3, 3, 1, 1, 2, 2, 1, 1, 1, 2, 2, 0],
                     [1, 6, 6, 7, 14, 14, 1, 4, 4, 1, 1, 3, 3, 1, 1, 1, 2, 2, 0]]
    assert len(list(direct_calls(lines, ("libjit_conv2d_f32",)))) == 2  # the encoder's stay ordinary


def test_autoencoder_in_every_variant(autoencoder, tmp_path):
    from specializer import inputs
    from specializer.driver.compare import compare
    from specializer.optimize import variants

    comp = compare(inputs.load(autoencoder.model_ll), tmp_path / "cmp", variants.Options.of(unroll_candidates=()))
    assert [r.variant for r in comp.rows] == list(variants.VARIANTS)
    for r in comp.rows:
        assert r.status == "pass", (r.variant, r)
