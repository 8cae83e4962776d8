"""libjit_dwconv_s8 (libkernels/dwconv_s8.c), the all-args depthwise kernel, on QEMU's Cortex-M4:
with the arguments relayout_depthwise.arguments lays out, every case's output equals CMSIS-NN's
depthwise convolution computed in NumPy (test_cmsis_nn.ref_dw), in the fast requantization and
in the exact one."""

import numpy as np
import pytest
from kernel_firmware import run_kernel
from test_cmsis_nn import DATA, dw_case, ref_dw

from specializer.optimize import relayout_depthwise as rd

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="tests/data/cmsis_nn is missing")


def cases():
    rng = np.random.default_rng(7)
    out = [dw_case(rng, 1, 6, 5, 6, 1, 3, 3, pad=((1, 1), (1, 1))),  # KWS's form, odd width
           dw_case(rng, 1, 7, 8, 5, 1, 3, 3, stride=(2, 2), pad=((0, 1), (0, 1))),  # MobileNet's stride 2
           dw_case(rng, 1, 8, 7, 6, 1, 3, 3, stride=(1, 2), pad=((2, 1), (1, 2))),
           dw_case(rng, 1, 7, 6, 7, 1, 5, 3, pad=((2, 2), (1, 1))),
           dw_case(rng, 1, 5, 9, 3, 1, 2, 4, pad=((0, 1), (1, 2))),  # even width: as many odd pairs as even
           dw_case(rng, 1, 4, 6, 4, 1, 1, 1),
           dw_case(rng, 1, 6, 6, 4, 1, 3, 3, bias=False)]
    exact = dw_case(rng, 1, 6, 6, 5, 1, 3, 3, pad=((1, 1), (1, 1)))
    exact["shift"][2] = 1  # a left shift: no fast form, the call keeps arm_nn_requantize
    out.append(exact)
    for c in out[-3:-1]:
        c["act"] = (-100, 90)  # a fused activation's clamp
    return out


def layout(c) -> rd.Args:
    _, ih, iw, ch = c["inp"].shape
    (oh, ow), (_, kh, kw, _) = c["out_hw"], c["filt"].shape
    shape = rd.Shape(ih, iw, ch, kh, kw, *c["stride"], c["pad"][0][0], c["pad"][1][0], oh, ow)
    bias = [0] * ch if c["bias"] is None else c["bias"].tolist()
    return rd.arguments(shape, c["filt"].reshape(-1), bias, c["mult"].tolist(), c["shift"].tolist(), c["in_off"],
                        c["out_off"], c["act"])


def test_dwconv_s8_matches_cmsis_nn_on_cortex_m4(tmp_path):
    cs = cases()
    args = [layout(c) for c in cs]
    assert [a.fast for a in args] == [True] * (len(cs) - 1) + [False]
    plane = max(a.shape.plane()[0] * a.shape.plane()[1] for a in args)
    got = run_kernel(tmp_path, "libjit_dwconv_s8", f"static int16_t plane[{plane}] __attribute__((aligned(4)));\n",
                     [(c["inp"], a, ref_dw(c).size, "plane") for c, a in zip(cs, args)])
    for i, c in enumerate(cs):
        assert np.array_equal(got[i], ref_dw(c).ravel().astype(np.int64)), i


def test_weights_are_pairs_per_row_and_the_offset_is_folded():
    # one channel, 1 row of 3 taps, stride 1: even pairs (w0,w1),(w2,0), odd pair (w1,w2)
    shape = rd.Shape(1, 4, 1, 1, 3, 1, 1, 0, 1, 1, 4)
    a = rd.arguments(shape, np.array([3, -5, 7]), [100], [1 << 30], [-2], in_off=128, out_off=-4, act=(-128, 127))
    assert a.fast and a.weights.tolist() == [6, -10, 14, 0, -10, 14]  # doubled for the fast form
    assert a.rq[0] == 2 * (100 + 128 * (3 - 5 + 7))  # 2 * (bias + input_offset * sum(w))
    assert a.rq[2:] == [2 + (-4 << 2), 2]  # K = 2^(rs-1) + out_offset * 2^rs, rs
    assert a.pad_value == -128 and shape.plane() == (1, 6)
