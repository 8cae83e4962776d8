"""libjit_conv_s8 (libkernels/conv_s8.c), the all-args conv kernel, on QEMU's Cortex-M4: with the
arguments relayout_conv.arguments lays out, every case's output equals CMSIS-NN's convolution
computed in NumPy (test_cmsis_nn.ref_conv), 1x1 read in place and gathered windows, three pixels
at a time and the one or two left, in the fast requantization and in the exact one, and with
output channels that no input changes written from a constant row instead of computed."""

import numpy as np
import pytest
from kernel_firmware import run_kernel
from test_cmsis_nn import DATA, conv_case, ref_conv

from specializer.optimize import int8_layout
from specializer.optimize import relayout_conv as rc

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="tests/data/cmsis_nn is missing")


def cases():
    rng = np.random.default_rng(5)
    out = [conv_case(rng, 1, 5, 5, 16, 8, 1, 1),  # 1x1 in place, an odd number of pixels
           conv_case(rng, 1, 7, 6, 12, 6, 1, 1, stride=(2, 2)),  # ResNet's strided shortcut
           conv_case(rng, 1, 3, 4, 6, 5, 1, 1),  # k % 4 == 2 taps left, an odd number of channels
           conv_case(rng, 1, 2, 4, 8, 6, 1, 1),  # 8 pixels: three triples, the last two pixels again
           conv_case(rng, 1, 6, 7, 5, 6, 3, 3, pad=(1, 1)),
           conv_case(rng, 1, 12, 6, 1, 8, 10, 4, stride=(2, 2), pad=(4, 1)),  # KWS's first conv
           conv_case(rng, 1, 1, 1, 19, 7, 1, 1),  # one pixel (a dense layer at batch 1), k % 4 == 3
           conv_case(rng, 1, 8, 8, 3, 4, 3, 3, dil=(2, 1), pad=(2, 1), bias=False),
           conv_case(rng, 1, 4, 4, 8, 4, 1, 1)]
    out[-2]["act"] = out[-1]["act"] = (-100, 90)  # a fused activation's clamp
    out[-1]["shift"][1] = 2  # a left shift: no fast form, the call keeps arm_nn_requantize
    # channels whose output no input changes (a shift of 2^-31: every accumulator rounds to 0),
    # written from the constant row, the others computed: three pixels at a time, then gathered
    # windows with an odd number left, then a layer with nothing left to compute
    some, gathered, every = (conv_case(rng, 1, 3, 3, 8, 8, 1, 1), conv_case(rng, 1, 5, 4, 4, 6, 3, 3, pad=(1, 1)),
                             conv_case(rng, 1, 2, 3, 8, 4, 1, 1))
    some["shift"][[1, 4, 5]] = -31
    gathered["shift"][[0, 2, 5]] = -31
    every["shift"][:] = -31
    for c in (out[0], out[3], some):  # a fused ReLU's clamp: the fast form without its sign step
        c["act"] = (c["out_off"], 127)
    # a dense layer at batch 1 with constant channels: a step of four computed channels, then a pair
    dense = conv_case(rng, 1, 1, 1, 12, 9, 1, 1)
    dense["shift"][2] = -31
    # one pixel (four output channels a step): a gathered 3x3 window with one channel in its last
    # step, and three taps (no group of four) over six channels
    window, few = conv_case(rng, 1, 3, 3, 5, 5, 3, 3), conv_case(rng, 1, 1, 1, 3, 6, 1, 1)
    return out + [some, gathered, every, dense, window, few]


CONSTANT = [2, 0, 0, 3, 0, 0, 0, 0, 0, 3, 3, 4, 3, 0, 0]  # output channels of each case no input changes (random shifts of
# 2^-15 and below make some of the first cases')


def layout(c, narrow=False) -> rc.Args:
    _, ih, iw, ic = c["inp"].shape
    oc, kh, kw, _ = c["filt"].shape
    shape = rc.Shape(ih, iw, ic, oc, kh, kw, *c["stride"], *c["pad"], *c["dil"], *c["out_hw"])
    bias = [0] * oc if c["bias"] is None else c["bias"].tolist()
    return rc.arguments(shape, c["filt"], bias, c["mult"].tolist(), c["shift"].tolist(), c["in_off"], c["out_off"],
                        c["act"], narrow)


@pytest.mark.parametrize("narrow", [False, True], ids=["int16-panels", "int8-panels"])
def test_conv_s8_matches_cmsis_nn_on_cortex_m4(tmp_path, narrow):
    cs = cases()
    args = [layout(c, narrow) for c in cs]
    assert [a.fast_mode() for a in args] == [2, 1, 1, 2, 1, 1, 1, 1, 0, 2, 1, 1, 1, 1, 1]
    assert [a.shape.direct for a in args] == [True, True, True, True, False, False, True, False, True, True, False,
                                              True, True, False, True]
    assert [i for i, a in enumerate(args) if a.shape.single] == [6, 12, 13, 14]  # one pixel: four channels a step
    # the gathered 3x3x5 window (k = 45): its bytes rounded to a word, then 11 groups of taps 0/2 and
    # 1/3 of the one pixel
    assert args[13].cols_bytes() == 48 + 88
    assert [a.shape.out_c - a.live for a in args] == CONSTANT
    assert all((a.index is None) == (a.live == a.shape.out_c) for a in args)
    assert all(a.weights.dtype == (np.int8 if narrow else np.int16) for a in args)
    cols = max(a.cols_bytes() for a in args)
    got = run_kernel(tmp_path, "libjit_conv_s8", f"static int8_t cols[{cols}] __attribute__((aligned(4)));\n",
                     [(c["inp"], a, ref_conv(c).size, "cols" if a.cols_bytes() else "0")
                      for c, a in zip(cs, args)])
    for i, c in enumerate(cs):
        assert np.array_equal(got[i], ref_conv(c).ravel().astype(np.int64)), i


def test_packed_form_exact_at_its_bound(tmp_path):
    """int8 panels, one pixel (quads) and three (triples): a layer whose largest sum over the
    groups' taps is the packed form's bound (128 x 65535 for an input of -128s) takes it, one a
    unit past it widens its weights with SXTB16; all bit-exact with CMSIS-NN's convolution, the
    extreme outputs not clamped."""
    rng = np.random.default_rng(21)
    cs = []
    for width in (1, 3):
        for past in (False, True):
            c = conv_case(rng, 1, 1, width, 514, 5, 1, 1)  # 128 groups, two taps left, a quad and one channel
            c["inp"][..., :512] = -128
            c["filt"][0, ..., :512] = -128
            c["filt"][0, 0, 0, 0] = -128 if past else -127
            c["filt"][2, ..., :512] = 127
            c["in_off"], c["out_off"], c["mult"][:], c["shift"][:] = 7, 0, 1 << 30, -17
            c["bias"][:] = 0
            cs.append(c)
    args = [layout(c, narrow=True) for c in cs]
    assert [a.packed for a in args] == [True, False, True, False]
    assert [a.shape.single for a in args] == [True, True, False, False]
    cols = max(a.cols_bytes() for a in args)
    got = run_kernel(tmp_path, "libjit_conv_s8", f"static int8_t cols[{cols}] __attribute__((aligned(4)));\n",
                     [(c["inp"], a, ref_conv(c).size, "cols") for c, a in zip(cs, args)])
    for i, c in enumerate(cs):
        want = ref_conv(c).reshape(-1, 5).astype(np.int64)
        assert np.array_equal(got[i], want.ravel()), i
        assert (np.abs(want[:, [0, 2]]) < 127).all(), want  # the extreme sums, not the clamp


def test_one_pixel_packed_form_in_every_requantization(tmp_path):
    """Packed quads (one pixel, int8 panels) with CMSIS-NN's requantization (a left shift: no fast
    form), the fast form without its sign step (a fused ReLU), and constant channels (an index,
    five computed: a quad, then one with a missing pair), each with a tail of two taps."""
    rng = np.random.default_rng(17)
    cs = [conv_case(rng, 1, 1, 1, 14, 7, 1, 1) for _ in range(3)]
    cs[0]["shift"][1] = 2
    cs[1]["act"] = (cs[1]["out_off"], 127)
    cs[2]["shift"][0] = -31  # with channel 2, whose shift makes it constant too
    args = [layout(c, narrow=True) for c in cs]
    assert [a.packed for a in args] == [True] * 3 and [a.fast_mode() for a in args] == [0, 2, 1]
    assert args[2].live == 5 and args[2].index is not None
    scratch = f"static int8_t cols[{args[0].cols_bytes()}] __attribute__((aligned(4)));\n"
    got = run_kernel(tmp_path, "libjit_conv_s8", scratch,
                     [(c["inp"], a, ref_conv(c).size, "cols") for c, a in zip(cs, args)])
    for i, c in enumerate(cs):
        want = ref_conv(c).ravel().astype(np.int64)
        assert np.array_equal(got[i], want), i
        assert ((want > -128) & (want < 127)).sum() >= 4, (i, want)  # the arithmetic, not the clamp


@pytest.mark.parametrize("narrow", [False, True], ids=["int16-panels", "int8-panels"])
def test_two_pixels_and_taps_fewer_than_a_group_take_the_pair_step(tmp_path, narrow):
    """The two-pixel step (never the packed form): a layer of two pixels, 1x1 and a gathered 3x3
    window with a tail, and one of three taps a pixel (no group of four) over nine pixels."""
    rng = np.random.default_rng(13)
    cs = [conv_case(rng, 1, 1, 2, 8, 5, 1, 1), conv_case(rng, 1, 2, 1, 3, 4, 3, 3, pad=(1, 1)),
          conv_case(rng, 1, 3, 3, 3, 4, 1, 1)]
    args = [layout(c, narrow) for c in cs]
    assert not any(a.packed for a in args)
    assert [a.shape.out_h * a.shape.out_w for a in args] == [2, 2, 9] and args[2].shape.k < 4
    cols = max(a.cols_bytes() for a in args)
    got = run_kernel(tmp_path, "libjit_conv_s8", f"static int8_t cols[{max(cols, 4)}] __attribute__((aligned(4)));\n",
                     [(c["inp"], a, ref_conv(c).size, "cols" if a.cols_bytes() else "0") for c, a in zip(cs, args)])
    for i, c in enumerate(cs):
        want = ref_conv(c).ravel().astype(np.int64)
        assert np.array_equal(got[i], want), i
        assert len(np.unique(want)) > 4, i


@pytest.mark.parametrize("narrow", [False, True], ids=["int16-panels", "int8-panels"])
def test_windows_of_whole_groups_widened_straight_from_the_input(tmp_path, narrow):
    """Input channels a multiple of 4 (each filter tap whole groups of four): the kernel widens
    each window from the input, a window wholly inside at offsets from one pointer, one at an
    edge tap by tap with the padding from a row of the zero point. Strides, dilation, an even
    filter height, a padded 1x1, a fused activation, bit-exact with CMSIS-NN's convolution."""
    rng = np.random.default_rng(9)
    cs = [conv_case(rng, 1, 7, 9, 8, 5, 3, 3, stride=(2, 1), pad=(1, 1)),
          conv_case(rng, 1, 9, 8, 4, 3, 3, 3, dil=(2, 2), pad=(2, 2)),
          conv_case(rng, 1, 6, 6, 12, 7, 2, 3, pad=(0, 1)),
          conv_case(rng, 1, 4, 5, 16, 4, 1, 1, pad=(1, 1)),
          conv_case(rng, 1, 12, 12, 16, 6, 3, 3, stride=(2, 2), pad=(1, 1)),
          conv_case(rng, 1, 5, 4, 24, 5, 3, 3, pad=(1, 1))]  # 24 channels: a tap's words four, then two
    cs[2]["act"] = (-90, 100)
    args = [layout(c, narrow) for c in cs]
    assert not any(a.shape.direct or a.shape.single for a in args)
    cols = max(a.cols_bytes() for a in args)
    got = run_kernel(tmp_path, "libjit_conv_s8", f"static int8_t cols[{cols}] __attribute__((aligned(4)));\n",
                     [(c["inp"], a, ref_conv(c).size, "cols") for c, a in zip(cs, args)])
    for i, c in enumerate(cs):
        want = ref_conv(c).ravel().astype(np.int64)
        assert np.array_equal(got[i], want), i
        assert len(np.unique(want)) > 10, i  # the arithmetic, not the clamp


def test_panels_interleave_two_channels_in_sxtb16_order():
    taps = np.arange(1, 13).reshape(2, 6)  # two channels, k = 6: one group of four, two taps left
    assert rc._panels(taps).tolist() == [1, 3, 2, 4, 7, 9, 8, 10, 5, 11, 6, 12]
    odd = rc._panels(np.arange(1, 5).reshape(1, 4))  # one channel: its partner is zeros
    assert odd.tolist() == [1, 3, 2, 4, 0, 0, 0, 0]
    # int8: per half of the group one word of both channels (o, o+1 of tap 0, then of tap 2; then taps
    # 1 and 3): its SXTB16 is o's pair, rotated by 8 o+1's; the two left as pairs, padded to a word
    assert rc._narrow_panels(taps).tolist() == [1, 7, 3, 9, 2, 8, 4, 10, 5, 11, 6, 12]
    assert rc._narrow_panels(np.arange(1, 11).reshape(2, 5)).tolist() == [1, 6, 3, 8, 2, 7, 4, 9, 5, 10, 0, 0]


def test_one_pixel_panels_take_four_channels_a_group_of_each_pair_in_turn():
    taps = np.arange(1, 19).reshape(3, 6)  # three channels (the fourth zeros), k = 6
    a, b = rc._panels(taps[:2]).tolist(), rc._panels(taps[2:]).tolist()
    assert a == [1, 3, 2, 4, 7, 9, 8, 10, 5, 11, 6, 12] and b[:4] == [13, 15, 14, 16]
    # group 0 of pair (0, 1), group 0 of pair (2, 3), then their last two taps in the same order
    assert rc._quads(rc._panels(taps), 3, 6).tolist() == a[:8] + b[:8] + a[8:] + b[8:]
    one = rc.Shape(1, 1, 6, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1)
    got = rc.arguments(one, taps, [0] * 3, [1 << 30] * 3, [-4] * 3, 0, 0, (-128, 127))
    assert one.single and got.fast  # the fast form's doubled weights, laid out as quads
    assert got.weights.tolist() == [2 * v for v in a[:8] + b[:8] + a[8:] + b[8:]]
    # int8 panels the same way: a group (two words) of each pair in turn, then each pair's last two
    # taps padded to a word; in a group's words the packed form: per tap (o+1's + 128, o's)
    n, m = rc._narrow_panels(taps[:2]).tolist(), rc._narrow_panels(taps[2:]).tolist()
    assert n == [1, 7, 3, 9, 2, 8, 4, 10, 5, 11, 6, 12] and m == [13, 0, 15, 0, 14, 0, 16, 0, 17, 0, 18, 0]
    pn, pm = [7 - 128, 1, 9 - 128, 3, 8 - 128, 2, 10 - 128, 4], [-128, 13, -128, 15, -128, 14, -128, 16]
    assert rc._packed(np.array(n, np.int8), 6).tolist() == pn + n[8:]
    narrow = rc.arguments(one, taps, [0] * 3, [1 << 30] * 3, [-4] * 3, 0, 0, (-128, 127), narrow=True)
    assert narrow.packed and narrow.ints()[17] == 2  # the kernel's `narrow` argument: the packed form
    assert narrow.weights.tolist() == pn + pm + n[8:] + m[8:]


def test_packed_form_only_where_every_sum_fits_its_high_bytes():
    taps = np.full((2, 514), -128)  # 128 groups and two taps left
    taps[0, 0] = -127
    taps[1] = 5
    assert 128 * 65535 == rc.PACKED_BOUND - 127 and rc._packable(taps)  # the last two taps are not in the sums
    taps[0, 0] = -128
    assert not rc._packable(taps)
    assert not rc._packable(np.ones((3, 3)))  # no group of four taps
    layer = rc.Layer(rc.Shape(1, 1, 514, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1),
                     int8_layout.Constants(taps.reshape(-1), [0, 0], [1 << 30] * 2, [-4] * 2), 0, 0, (-128, 127))
    assert not layer.packs() and not layer.arguments(True).packed


def test_int16_panels_go_to_the_layers_with_most_pixels():
    def args(pixels, k):
        return rc.arguments(rc.Shape(pixels, 1, k, 8, 1, 1, 1, 1, 0, 0, 1, 1, pixels, 1), np.ones((8, k)), [0] * 8,
                            [1 << 30] * 8, [-4] * 8, 0, 0, (-128, 127))
    found = [(0, args(100, 64)), (1, args(400, 32)), (2, args(25, 128))]  # 512, 256, 1024 weight bytes
    assert rc._narrowed(found, 0.5, floor=0) == {2}  # 896 of 1792 bytes widen: 400 pixels (256), 100 (512)
    assert rc._narrowed(found, 1.0, floor=0) == set()
    assert rc._narrowed(found, 0.5) == set()  # a small model: all widened
    assert rc._narrowed(found, 0.0) == {0, 1, 2}
