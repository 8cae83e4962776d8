"""libjit_dwconv_s8 (libkernels/dwconv_s8.c), the all-args depthwise kernel, and
libjit_dwconv_mult_s8 (dwconv_mult_s8.c, a channel multiplier above 1) on QEMU's Cortex-M4:
with the arguments relayout_depthwise.arguments lays out, every case's output equals CMSIS-NN's
depthwise convolution computed in NumPy (test_cmsis_nn.ref_dw), in the fast requantization and
in the exact one."""

import numpy as np
import pytest
from every_variant import every_variant_passes
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
           dw_case(rng, 1, 3, 9, 3, 1, 2, 2, pad=((0, 1), (0, 0))),  # a 2-wide row: one pair, both outputs
           dw_case(rng, 1, 3, 9, 3, 1, 1, 1, stride=(2, 2)),  # a 1-wide row at stride 2: (w0, 0)
           dw_case(rng, 1, 2, 17, 2, 1, 1, 13, pad=((0, 0), (6, 6))),  # the widest four-output step
           dw_case(rng, 1, 2, 16, 2, 1, 2, 14, pad=((0, 1), (6, 7))),  # even and too wide: two outputs a step
           dw_case(rng, 1, 6, 6, 4, 1, 3, 3, bias=False),
           dw_case(rng, 1, 3, 11, 3, 1, 1, 7, pad=((0, 0), (3, 3))),  # four outputs a step, 5 input pairs a row
           dw_case(rng, 1, 2, 18, 2, 1, 1, 15, pad=((0, 0), (7, 7)))]  # 9 pairs a row: two outputs a step
    exact = dw_case(rng, 1, 6, 6, 5, 1, 3, 3, pad=((1, 1), (1, 1)))
    exact["shift"][2] = 1  # a left shift: no fast form, the call keeps arm_nn_requantize
    out.append(exact)
    for c in out[-3:-1]:
        c["act"] = (-100, 90)  # a fused activation's clamp
    for c in out[:2]:  # a fused ReLU's clamp: the fast form without its sign step
        c["act"] = (c["out_off"], 127)
    return out


def layout(c) -> rd.Args:
    _, ih, iw, ch = c["inp"].shape
    (oh, ow), (_, kh, kw, _) = c["out_hw"], c["filt"].shape
    shape = rd.Shape(ih, iw, ch, kh, kw, *c["stride"], c["pad"][0][0], c["pad"][1][0], oh, ow, c["ch_mult"])
    bias = [0] * shape.out_c if c["bias"] is None else c["bias"].tolist()
    return rd.arguments(shape, c["filt"].reshape(-1), bias, c["mult"].tolist(), c["shift"].tolist(), c["in_off"],
                        c["out_off"], c["act"])


def test_dwconv_s8_matches_cmsis_nn_on_cortex_m4(tmp_path):
    cs = cases()
    args = [layout(c) for c in cs]
    assert [a.fast_mode() for a in args] == [2, 2] + [1] * (len(cs) - 3) + [0]
    plane = max(a.shape.plane()[0] * a.shape.plane()[1] for a in args)
    got = run_kernel(tmp_path, "libjit_dwconv_s8", f"static int16_t plane[{plane}] __attribute__((aligned(4)));\n",
                     [(c["inp"], a, ref_dw(c).size, "plane") for c, a in zip(cs, args)])
    for i, c in enumerate(cs):
        assert np.array_equal(got[i], ref_dw(c).ravel().astype(np.int64)), i


def mult_cases():
    rng = np.random.default_rng(8)
    out = [dw_case(rng, 1, 6, 5, 7, 2, 3, 3, pad=((1, 1), (1, 1))),  # 7 -> 14 channels, odd width
           dw_case(rng, 1, 7, 8, 5, 2, 3, 3, stride=(2, 2), pad=((0, 1), (0, 1))),
           dw_case(rng, 1, 6, 7, 3, 3, 5, 3, pad=((2, 2), (1, 1))),  # multiplier 3
           dw_case(rng, 1, 5, 6, 1, 4, 2, 4, pad=((0, 1), (1, 2)), bias=False)]  # one input channel, 4 outputs
    exact = dw_case(rng, 1, 5, 5, 3, 2, 3, 3, pad=((1, 1), (1, 1)))
    exact["shift"][3] = 1  # a left shift on one output channel: arm_nn_requantize for the call
    exact["act"] = (-90, 100)
    out[0]["act"] = (out[0]["out_off"], 127)  # a fused ReLU's clamp: the fast form without its sign step
    # stride 2, six outputs a row: a step of four, then two single ones
    wide = dw_case(rng, 1, 5, 11, 3, 2, 3, 3, stride=(2, 2), pad=((1, 1), (1, 1)))
    return out + [exact, wide]


def test_dwconv_mult_s8_matches_cmsis_nn_on_cortex_m4(tmp_path):
    cs = mult_cases()
    args = [layout(c) for c in cs]
    assert [a.shape.kernel for a in args] == ["libjit_dwconv_mult_s8"] * len(cs)
    assert [a.fast_mode() for a in args] == [2, 1, 1, 1, 0, 1]
    plane = max(a.shape.plane()[0] * a.shape.plane()[1] for a in args)
    got = run_kernel(tmp_path, "libjit_dwconv_mult_s8", f"static int16_t plane[{plane}] __attribute__((aligned(4)));\n",
                     [(c["inp"], a, ref_dw(c).size, "plane") for c, a in zip(cs, args)])
    for i, c in enumerate(cs):
        assert np.array_equal(got[i], ref_dw(c).ravel().astype(np.int64)), i


def test_weights_are_pairs_per_row_and_the_offset_is_folded():
    # one channel, 1 row of 3 taps, stride 1: the even pair (w0,w1), the odd pair (w1,w2)
    shape = rd.Shape(1, 4, 1, 1, 3, 1, 1, 0, 1, 1, 4)
    a = rd.arguments(shape, np.array([3, -5, 7]), [100], [1 << 30], [-2], in_off=128, out_off=-4, act=(-128, 127))
    assert a.fast and a.weights.tolist() == [6, -10, -10, 14]  # doubled for the fast form
    assert a.rq[0] == 2 * (100 + 128 * (3 - 5 + 7))  # 2 * (bias + input_offset * sum(w))
    assert a.rq[2:] == [2 + (-4 << 2), 2]  # K = 2^(rs-1) + out_offset * 2^rs, rs
    assert a.pad_value == -128 and shape.plane() == (1, 6)


# a user's model with a depthwise conv of multiplier 2 over 7 channels, quantized
DW_MULT_INT8 = """
import jax
import numpy as np
from jax import lax

from specializer.quant.ptq import quantize

DN = ("NHWC", "HWIO", "NHWC")


def float_net(x, dw, db, p):
    h = jax.nn.relu(lax.conv_general_dilated(x, dw, (1, 1), "SAME", dimension_numbers=DN,
                                             feature_group_count=7) + db)
    return lax.conv_general_dilated(h, p, (2, 2), "SAME", dimension_numbers=DN)


rng = np.random.default_rng(5)
W = {"dw": (rng.standard_normal((3, 3, 1, 14)) * 0.4).astype(np.float32),
     "db": (rng.standard_normal(14) * 0.1).astype(np.float32),
     "p": (rng.standard_normal((3, 3, 14, 5)) * 0.2).astype(np.float32)}
calibration = [{"x": rng.standard_normal((1, 9, 11, 7)).astype(np.float32)} for _ in range(8)]
dw_mult_int8, params = quantize(float_net, W, calibration, name="dw_mult_int8")
dw_mult_int8.example_inputs = {"x": dw_mult_int8.inputs["x"].quantize(calibration[0]["x"])}
dw_mult_int8.weights = params
"""


def test_quantized_multiplier_model_in_every_variant(tmp_path):
    """all-args runs the depthwise on libjit_dwconv_mult_s8, the others on CMSIS-NN's; every
    variant's output equals the int8 model's JAX value exactly."""
    from specializer.capture.capture import capture

    src = tmp_path / "dw_mult_int8.py"
    src.write_text(DW_MULT_INT8)
    c = capture(src, "dw_mult_int8", tmp_path / "cap")
    every_variant_passes(c.model_ll, tmp_path, exact=True)
    log = (tmp_path / "cmp" / "all-args" / "specialization.log").read_text()
    assert "calls @libjit_dwconv_mult_s8" in log
