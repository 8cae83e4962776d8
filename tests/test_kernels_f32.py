"""libjit f32 kernels (libkernels/matmul_f32.c, conv2d_f32.c) built for the host with gcc in
CMSIS-DSP's plain-C mode and called through ctypes, against float64 numpy references."""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from specializer.library import cmsis
from specializer.errors import UserError
from specializer.tools import repo_root

GUARD = 16
SENTINEL = np.float32(12345.0)


def host_library(out_dir, *extra: str):
    """matmul_f32.c, conv2d_f32.c, the CMSIS-DSP sources they use and `extra` (more libkernels
    files) built for the host as one shared library (skips without gcc or CMSIS-DSP)."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no host gcc")
    try:
        dsp = cmsis.cmsis_dsp()
    except UserError as e:
        pytest.skip(str(e))
    src = repo_root() / "libkernels"
    listed = [ln.split("#")[0].strip() for ln in (src / "cmsis_dsp_sources.txt").read_text().splitlines()]
    sources = [src / "matmul_f32.c", src / "conv2d_f32.c"] + [src / e for e in extra]
    sources += [dsp / "Source" / n for n in listed if n]
    so = out_dir / "libkernels_f32.so"
    cmd = [gcc, "-O2", "-std=c11", "-Wall", "-Werror", "-fPIC", "-shared", "-ffp-contract=off",
           "-D__GNUC_PYTHON__", f"-I{src}", f"-I{dsp / 'Include'}", f"-I{dsp / 'PrivateInclude'}",
           *map(str, sources), "-o", str(so), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    so_lib = ctypes.CDLL(str(so))
    p, i = ctypes.c_void_p, ctypes.c_int32
    so_lib.libjit_conv2d_f32.argtypes = [p, p, p, p] + [i] * 16
    so_lib.libjit_conv2d_f32.restype = None
    return so_lib


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so_lib = host_library(tmp_path_factory.mktemp("kernels_f32"))
    p, i = ctypes.c_void_p, ctypes.c_int32
    so_lib.libjit_matmul_f32.argtypes = [p, p, p] + [i] * 6
    so_lib.libjit_matmul_f32.restype = None
    return so_lib


def _guarded(n):
    """A float32 buffer of n elements followed by a guard zone."""
    buf = np.full(n + GUARD, SENTINEL, dtype=np.float32)
    return buf


def _ptr(a):
    return None if a is None else a.ctypes.data


def _check(got, ref, bound, rtol=1e-5):
    err = np.abs(got.astype(np.float64) - ref)
    tol = rtol * bound + 1e-30
    bad = err > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, worst {np.max(err - tol):.3g} over"


MATMUL_SHAPES = [  # batch, m, k, n
    (1, 1, 7, 13), (1, 1, 16, 8), (1, 1, 256, 512), (2, 1, 33, 3), (1, 1, 1, 1),
    (3, 5, 7, 11), (2, 4, 4, 4), (1, 9, 1, 17), (1, 6, 10, 1), (1, 17, 19, 23), (2, 2, 3, 2),
    (2, 7, 17, 1), (1, 1, 5, 1), (2, 13, 16, 21), (1, 125, 64, 64),
]


@pytest.mark.parametrize("lt,rt", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("shape", MATMUL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul(lib, shape, lt, rt):
    batch, m, k, n = shape
    rng = np.random.default_rng(hash(shape) % 2**32 + 2 * lt + rt)
    lhs = rng.standard_normal((batch, m, k)).astype(np.float32)
    rhs = rng.standard_normal((batch, k, n)).astype(np.float32)
    ls = np.ascontiguousarray(lhs.transpose(0, 2, 1) if lt else lhs)
    rs = np.ascontiguousarray(rhs.transpose(0, 2, 1) if rt else rhs)
    out = _guarded(batch * m * n)
    lib.libjit_matmul_f32(_ptr(out), _ptr(ls), _ptr(rs), batch, m, k, n, lt, rt)
    assert (out[batch * m * n:] == SENTINEL).all(), "wrote past the output"
    ref = np.matmul(lhs.astype(np.float64), rhs.astype(np.float64))
    bound = np.matmul(np.abs(lhs.astype(np.float64)), np.abs(rhs.astype(np.float64)))
    _check(out[:batch * m * n].reshape(batch, m, n), ref, bound)


# Every edge of the register-blocked GEMM (4x4 blocks, 4x1 columns, 2-row blocks, a last row
# through vecmat's 16/8/4/1 column blocks) and the n == 1 matrix-vector path.
GEMM_M, GEMM_N, GEMM_K = (1, 2, 3, 4, 5, 7, 9), (1, 3, 4, 5, 8, 13), (1, 3, 16, 17)


@pytest.mark.parametrize("k", GEMM_K)
@pytest.mark.parametrize("n", GEMM_N)
@pytest.mark.parametrize("m", GEMM_M)
def test_matmul_blocked_edges(lib, m, k, n):
    rng = np.random.default_rng(1000 * m + 10 * n + k)
    lhs = rng.standard_normal((1, m, k)).astype(np.float32)
    rhs = rng.standard_normal((1, k, n)).astype(np.float32)
    out = _guarded(m * n)
    lib.libjit_matmul_f32(_ptr(out), _ptr(lhs), _ptr(rhs), 1, m, k, n, 0, 0)
    assert (out[m * n:] == SENTINEL).all(), "wrote past the output"
    ref = lhs.astype(np.float64) @ rhs.astype(np.float64)
    bound = np.abs(lhs.astype(np.float64)) @ np.abs(rhs.astype(np.float64))
    _check(out[:m * n].reshape(1, m, n), ref, bound)


@pytest.mark.parametrize("n", [16, 24, 29, 33, 512])
def test_matmul_vecmat_wide(lib, n):
    """m == 1: vecmat's 16-column blocks and their 8/4/1 tails."""
    rng = np.random.default_rng(n)
    k = 37
    x = rng.standard_normal((1, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    out = _guarded(n)
    lib.libjit_matmul_f32(_ptr(out), _ptr(x), _ptr(w), 1, 1, k, n, 0, 0)
    assert (out[n:] == SENTINEL).all(), "wrote past the output"
    ref = x.astype(np.float64) @ w.astype(np.float64)
    bound = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64))
    _check(out[:n].reshape(1, n), ref, bound)


@pytest.mark.parametrize("lt,rt", [(0, 0), (0, 1), (1, 0), (1, 1)])
@pytest.mark.parametrize("shape", [(2, 2, 70000, 3), (1, 3, 2, 70000), (1, 2, 0, 5)],
                         ids=["k>u16", "n>u16", "k=0"])
def test_matmul_beyond_cmsis_sizes(lib, shape, lt, rt):
    """CMSIS-DSP matrices have 16-bit dimensions; k == 0 is an all-zero product."""
    batch, m, k, n = shape
    rng = np.random.default_rng(7)
    lhs = rng.standard_normal((batch, m, k)).astype(np.float32)
    rhs = rng.standard_normal((batch, k, n)).astype(np.float32)
    ls = np.ascontiguousarray(lhs.transpose(0, 2, 1) if lt else lhs)
    rs = np.ascontiguousarray(rhs.transpose(0, 2, 1) if rt else rhs)
    out = _guarded(batch * m * n)
    lib.libjit_matmul_f32(_ptr(out), _ptr(ls), _ptr(rs), batch, m, k, n, lt, rt)
    assert (out[batch * m * n:] == SENTINEL).all()
    ref = np.matmul(lhs.astype(np.float64), rhs.astype(np.float64))
    bound = np.matmul(np.abs(lhs.astype(np.float64)), np.abs(rhs.astype(np.float64)))
    _check(out[:batch * m * n].reshape(batch, m, n), ref, bound, rtol=1e-4)


def test_matmul_empty_writes_nothing(lib):
    out = _guarded(0)
    x = np.ones(4, np.float32)
    lib.libjit_matmul_f32(_ptr(out), _ptr(x), _ptr(x), 1, 0, 2, 2, 0, 0)
    lib.libjit_matmul_f32(_ptr(out), _ptr(x), _ptr(x), 0, 2, 2, 2, 0, 0)
    assert (out == SENTINEL).all()


def conv_ref(x, w, stride, pads, out_hw, dil, groups):
    """Direct float64 convolution, NHWC x HWIO -> NHWC; returns (result, sum of |terms|)."""
    (sh, sw), (pt, pl), (oh, ow), (dh, dw) = stride, pads, out_hw, dil
    b, h, wd, c = x.shape
    kh, kw, cig, oc = w.shape
    cog = oc // groups
    need_h, need_w = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    xp = np.zeros((b, max(pt + h, need_h), max(pl + wd, need_w), c))
    xp[:, pt:pt + h, pl:pl + wd, :] = x
    out, bound = np.zeros((b, oh, ow, oc)), np.zeros((b, oh, ow, oc))
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, ky * dh:ky * dh + (oh - 1) * sh + 1:sh, kx * dw:kx * dw + (ow - 1) * sw + 1:sw, :]
            for g in range(groups):
                pg = patch[..., g * cig:(g + 1) * cig]
                wg = w[ky, kx, :, g * cog:(g + 1) * cog].astype(np.float64)
                out[..., g * cog:(g + 1) * cog] += pg @ wg
                bound[..., g * cog:(g + 1) * cog] += np.abs(pg) @ np.abs(wg)
    return out, bound


# batch, in_h, in_w, in_c, out_c, k_h, k_w, stride (h, w), padding (top, bottom, left, right),
# dilation (h, w), groups
CONV_CASES = {
    "3x3_same": (1, 5, 6, 3, 4, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "stride_asym_pad": (2, 7, 9, 5, 6, 3, 4, (2, 3), (0, 2, 1, 0), (1, 1), 1),
    "dilation": (1, 9, 8, 3, 5, 3, 2, (1, 1), (2, 1, 0, 3), (2, 3), 1),
    "wide_out_c": (1, 4, 5, 3, 29, 2, 2, (1, 1), (0, 1, 1, 0), (1, 1), 1),
    "groups2": (1, 6, 7, 4, 6, 3, 3, (1, 2), (1, 1, 1, 1), (1, 1), 2),
    "groups3_dil_stride": (2, 8, 8, 6, 9, 2, 3, (2, 1), (1, 0, 0, 2), (2, 1), 3),
    "groups2_cout13": (1, 5, 5, 4, 26, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 2),
    "depthwise": (1, 7, 7, 8, 8, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 8),
    "depthwise_odd_stride2": (2, 9, 6, 5, 5, 3, 3, (2, 2), (1, 1, 0, 1), (1, 1), 5),
    "depthwise_dilated": (1, 8, 9, 6, 6, 3, 3, (1, 2), (2, 2, 1, 3), (2, 2), 6),
    "depthwise_mult2": (1, 6, 6, 3, 6, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 3),
    "depthwise_mult5": (1, 5, 5, 2, 10, 2, 2, (1, 1), (0, 1, 0, 1), (2, 2), 2),
    "in_c1_kws_first": (1, 49, 10, 1, 64, 10, 4, (2, 2), (4, 5, 1, 1), (1, 1), 1),
    "in_c1_odd_out": (1, 6, 5, 1, 7, 3, 2, (1, 1), (1, 1, 0, 1), (1, 1), 1),
    "1x1": (2, 4, 5, 7, 9, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "1x1_kws_pointwise": (1, 25, 5, 64, 64, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "1x1_odd": (1, 3, 3, 5, 13, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "1x1_out_c1": (1, 3, 5, 6, 1, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 1),
    "depthwise_kws": (1, 25, 5, 64, 64, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 64),
    "depthwise_odd_c": (1, 6, 7, 7, 7, 3, 2, (1, 1), (1, 1, 0, 1), (1, 1), 7),
    "1x1_cropped": (2, 5, 6, 3, 4, 1, 1, (1, 1), (0, -1, 0, -2), (1, 1), 1),
    "1x1_cropped_h": (2, 5, 6, 3, 4, 1, 1, (1, 1), (0, -2, 0, 0), (1, 1), 1),
    "1x1_stride2": (1, 6, 6, 4, 3, 1, 1, (2, 2), (0, 0, 0, 0), (1, 1), 1),
    "1x1_padded": (1, 3, 3, 4, 5, 1, 1, (1, 1), (1, 1, 1, 1), (1, 1), 1),
    "1x1_grouped": (1, 4, 4, 6, 4, 1, 1, (1, 1), (0, 0, 0, 0), (1, 1), 2),
    "pad_only_rows": (1, 2, 2, 3, 2, 3, 3, (1, 1), (3, 3, 3, 3), (1, 1), 1),
    "pad_only_rows_depthwise": (1, 2, 2, 3, 3, 3, 3, (1, 1), (3, 3, 3, 3), (1, 1), 3),
    "1d": (2, 1, 11, 4, 6, 1, 3, (1, 2), (0, 0, 1, 1), (1, 1), 1),
    "window_gt_input": (1, 3, 2, 2, 3, 5, 4, (1, 1), (1, 1, 2, 2), (1, 1), 1),
}


def _out_size(size, k, s, lo, hi, d):
    return (size + lo + hi - ((k - 1) * d + 1)) // s + 1


def _uses_scratch(in_c, k_h, k_w, stride, pads, groups, out_hw, in_hw):
    """Mirrors the header: no scratch on the depthwise path or the 1x1 fast path."""
    if in_c // groups == 1:
        return False
    fast_1x1 = (groups == 1 and (k_h, k_w) == (1, 1) and stride == (1, 1) and pads[0] == pads[2] == 0
                and out_hw[0] <= in_hw[0] and out_hw[1] <= in_hw[1])
    return not fast_1x1


def run_conv(lib, case, seed=0):
    batch, in_h, in_w, in_c, out_c, k_h, k_w, stride, pads, dil, groups = case
    pt, pb, pl, pr = pads
    oh = _out_size(in_h, k_h, stride[0], pt, pb, dil[0])
    ow = _out_size(in_w, k_w, stride[1], pl, pr, dil[1])
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, in_h, in_w, in_c)).astype(np.float32)
    w = rng.standard_normal((k_h, k_w, in_c // groups, out_c)).astype(np.float32)
    n_out = batch * oh * ow * out_c
    out = _guarded(n_out)
    scratch = None
    n_scratch = ow * k_h * k_w * (in_c // groups)  # LIBJIT_CONV2D_SCRATCH_FLOATS
    if _uses_scratch(in_c, k_h, k_w, stride, pads, groups, (oh, ow), (in_h, in_w)):
        scratch = _guarded(n_scratch)
    lib.libjit_conv2d_f32(_ptr(out), _ptr(x), _ptr(w), _ptr(scratch), batch, in_h, in_w, in_c,
                          oh, ow, out_c, k_h, k_w, stride[0], stride[1], pt, pl, dil[0], dil[1], groups)
    assert (out[n_out:] == SENTINEL).all(), "wrote past the output"
    if scratch is not None:
        assert (scratch[n_scratch:] == SENTINEL).all(), "wrote past the scratch"
    return x, w, (oh, ow), out[:n_out].reshape(batch, oh, ow, out_c)


@pytest.mark.parametrize("name", CONV_CASES)
def test_conv2d(lib, name):
    case = CONV_CASES[name]
    x, w, out_hw, got = run_conv(lib, case)
    _, _, _, _, _, _, _, stride, pads, dil, groups = case
    ref, bound = conv_ref(x.astype(np.float64), w, stride, (pads[0], pads[2]), out_hw, dil, groups)
    _check(got, ref, bound)


@pytest.mark.parametrize("name", ["stride_asym_pad", "groups3_dil_stride", "depthwise_mult2", "1x1"])
def test_conv2d_matches_jax(lib, name):
    """The numpy reference's reading of the ABI is XLA's: cross-check with lax.conv_general_dilated."""
    lax = pytest.importorskip("jax.lax")
    case = CONV_CASES[name]
    x, w, out_hw, got = run_conv(lib, case, seed=1)
    _, _, _, _, _, _, _, stride, pads, dil, groups = case
    want = lax.conv_general_dilated(x, w, stride, [(pads[0], pads[1]), (pads[2], pads[3])],
                                    rhs_dilation=dil, dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=groups, precision=lax.Precision.HIGHEST)
    want = np.asarray(want)
    assert want.shape == got.shape
    _, bound = conv_ref(x.astype(np.float64), w, stride, (pads[0], pads[2]), out_hw, dil, groups)
    _check(got, want.astype(np.float64), bound, rtol=3e-5)
