"""The shim's int4-weight functions (arm_convolve_s4, arm_depthwise_conv_s4, arm_fully_connected_s4)
on the host: each case's output equals the s8 layer's NumPy reference (test_cmsis_nn) with the same
weights unpacked, over odd shapes, padding, stride 2, channel multipliers, odd weight counts (a
row starting mid-byte); and the packing is CMSIS-NN's documented one."""

import ctypes

import numpy as np
import pytest
from test_cmsis_nn import (Activation, Context, ConvParams, Dims, DwConvParams, FcParams, PerChannel, PerTensor,
                           conv_case, dw_case, fc_case, host, nn_call, ptr, ref_conv, ref_dw, ref_fc, tile)

from specializer.quant.blocks import pack_int4

__all__ = ["host"]  # the host library fixture, shared


def _int4(rng, c, key):
    """Case c with int4 weights, its shifts 4 up so the smaller sums still spread the outputs."""
    c[key] = rng.integers(-8, 8, c[key].shape, dtype=np.int8)
    c["shift"] = c["shift"] + 4
    return c


def test_packing_is_cmsis_nns():
    # arm_nnfunctions.h: four sequential weights [0x1, 0x2, 0x3, 0x4] packed as [0x21, 0x43]
    assert pack_int4(np.array([1, 2, 3, 4])).view(np.uint8).tolist() == [0x21, 0x43]
    assert pack_int4(np.array([-8, 7, -1])).view(np.uint8).tolist() == [0x78, 0x0F]
    for bad in ([3, 8], [259], [1.5, 2]):  # 259 would wrap to 3 as int8: checked before any cast
        with pytest.raises(ValueError, match=r"are not int4 weights \(integers in \[-8, 7\]\)"):
            pack_int4(np.array(bad))


def _conv_s4(lib, c, scratch: bool):
    nb, ih, iw, ic = c["inp"].shape
    oc, kh, kw, _ = c["filt"].shape
    oh, ow = c["out_hw"]
    out = np.zeros((nb, oh, ow, oc), np.int8)
    params = ConvParams(input_offset=c["in_off"], output_offset=c["out_off"], stride=tile(c["stride"]),
                        padding=tile(c["pad"]), dilation=tile((1, 1)),
                        activation=Activation(min=c["act"][0], max=c["act"][1]))
    packed = pack_int4(c["filt"])
    size = lib.arm_convolve_s4_get_buffer_size(ctypes.byref(Dims(nb, ih, iw, ic)), ctypes.byref(Dims(oc, kh, kw, ic)))
    assert size >= 2 * 2 * kh * kw * ic  # v7.0.0's: two int16 columns
    buf = np.full(size + 16, 0x5A, np.uint8)  # exactly `size` bytes, then a canary
    # no buffer: the shim's direct loop (v7.0.0 itself refuses a NULL buffer; capture always gives one)
    ctx = Context(buf=buf.ctypes.data if scratch else None, size=size)
    st = nn_call(lib, "arm_convolve_s4", ctx=ctypes.byref(ctx), conv_params=ctypes.byref(params),
                 quant_params=ctypes.byref(PerChannel(multiplier=c["mult"].ctypes.data, shift=c["shift"].ctypes.data)),
                 input_dims=ctypes.byref(Dims(nb, ih, iw, ic)), input_data=ptr(c["inp"]),
                 filter_dims=ctypes.byref(Dims(oc, kh, kw, ic)), filter_data=ptr(packed),
                 bias_dims=ctypes.byref(Dims(1, 1, 1, oc)), bias_data=ptr(c["bias"]),
                 output_dims=ctypes.byref(Dims(nb, oh, ow, oc)), output_data=ptr(out))  # fmt: skip
    assert st == 0 and (buf[size:] == 0x5A).all()  # nothing written past the buffer
    return out


def _dw_s4(lib, c):
    nb, ih, iw, ic = c["inp"].shape
    _, kh, kw, oc = c["filt"].shape
    oh, ow = c["out_hw"]
    out = np.zeros((nb, oh, ow, oc), np.int8)
    (top, _), (left, _) = c["pad"]
    params = DwConvParams(input_offset=c["in_off"], output_offset=c["out_off"], ch_mult=c["ch_mult"],
                          stride=tile(c["stride"]), padding=tile((top, left)), dilation=tile((1, 1)),
                          activation=Activation(min=c["act"][0], max=c["act"][1]))
    packed = pack_int4(c["filt"])
    st = nn_call(lib, "arm_depthwise_conv_s4", ctx=ctypes.byref(Context(buf=None, size=0)),
                 dw_conv_params=ctypes.byref(params),
                 quant_params=ctypes.byref(PerChannel(multiplier=c["mult"].ctypes.data, shift=c["shift"].ctypes.data)),
                 input_dims=ctypes.byref(Dims(nb, ih, iw, ic)), input=ptr(c["inp"]),
                 filter_dims=ctypes.byref(Dims(1, kh, kw, oc)), kernel=ptr(packed),
                 bias_dims=ctypes.byref(Dims(1, 1, 1, oc)), bias=ptr(c["bias"]),
                 output_dims=ctypes.byref(Dims(nb, oh, ow, oc)), output=ptr(out))  # fmt: skip
    assert st == 0
    return out


def _fc_s4(lib, c):
    out = np.zeros((c["batch"], c["outs"]), np.int8)
    params = FcParams(input_offset=c["in_off"], filter_offset=0, output_offset=c["out_off"],
                      activation=Activation(min=c["act"][0], max=c["act"][1]))
    packed = pack_int4(c["w"])
    st = nn_call(lib, "arm_fully_connected_s4", ctx=ctypes.byref(Context(buf=None, size=0)),
                 fc_params=ctypes.byref(params), quant_params=ctypes.byref(PerTensor(multiplier=c["mult"], shift=c["shift"])),
                 input_dims=ctypes.byref(Dims(c["batch"], 1, 1, c["depth"])), input_data=ptr(c["inp"]),
                 filter_dims=ctypes.byref(Dims(c["depth"], 1, 1, c["outs"])), filter_data=ptr(packed),
                 bias_dims=ctypes.byref(Dims(1, 1, 1, c["outs"])), bias_data=ptr(c["bias"]),
                 output_dims=ctypes.byref(Dims(c["batch"], 1, 1, c["outs"])), output_data=ptr(out))  # fmt: skip
    assert st == 0
    return out


def test_convolve_s4_is_the_s8_layer_of_its_weights(host):
    rng = np.random.default_rng(40)
    cases = [conv_case(rng, 1, 5, 5, 3, 5, 3, 3),  # 135 weights: the last byte half used
             conv_case(rng, 2, 7, 6, 5, 6, 3, 3, stride=(2, 1), pad=(1, 1)),
             conv_case(rng, 1, 9, 8, 7, 3, 3, 3, stride=(2, 2), pad=(1, 1), bias=False),  # rows of 63: mid-byte
             conv_case(rng, 1, 6, 6, 9, 7, 1, 1),
             conv_case(rng, 1, 1, 1, 1, 1, 1, 1),
             # rows a multiple of 8 weights: the two-pixel path with a scratch buffer (25 pixels: one left)
             conv_case(rng, 1, 6, 5, 8, 5, 3, 3, pad=(1, 1)),
             conv_case(rng, 2, 5, 5, 16, 3, 1, 1),
             conv_case(rng, 1, 7, 7, 2, 4, 2, 2, stride=(2, 2), pad=(1, 1), bias=False)]
    for i, c in enumerate(cases):
        c = _int4(rng, c, "filt")
        want = ref_conv(c)
        assert np.array_equal(_conv_s4(host, c, scratch=True), want), i
        assert np.array_equal(_conv_s4(host, c, scratch=False), want), i
    assert len(np.unique(ref_conv(cases[1]))) > 20  # outputs spread, not all clamped


def test_depthwise_conv_s4_is_the_s8_layer_of_its_weights(host):
    rng = np.random.default_rng(41)
    cases = [dw_case(rng, 1, 6, 5, 5, 1, 3, 3, pad=((1, 1), (1, 1))),
             dw_case(rng, 1, 7, 8, 7, 2, 3, 3, stride=(2, 2), pad=((0, 1), (0, 1))),  # multiplier 2, 14 channels
             dw_case(rng, 2, 5, 6, 3, 3, 2, 3, pad=((0, 1), (1, 1)), bias=False),  # multiplier 3, 9 channels
             dw_case(rng, 1, 4, 4, 1, 1, 1, 1),
             dw_case(rng, 1, 5, 4, 3, 1, 3, 3, pad=((1, 1), (1, 1))),  # odd channel count: one at a time
             dw_case(rng, 1, 6, 5, 8, 1, 3, 3, pad=((1, 1), (1, 1))),  # multiplier 1, 8 channels: in fours
             dw_case(rng, 2, 7, 6, 12, 1, 3, 3, stride=(2, 2), pad=((0, 1), (0, 1)), bias=False),
             dw_case(rng, 1, 5, 5, 2, 2, 3, 3, pad=((1, 1), (1, 1)))]  # multiplier 2, 4 channels: in pairs
    for i, c in enumerate(cases):
        c = _int4(rng, c, "filt")
        assert np.array_equal(_dw_s4(host, c), ref_dw(c)), i
    assert len(np.unique(ref_dw(cases[1]))) > 20


def test_fully_connected_s4_is_the_s8_layer_of_its_weights(host):
    rng = np.random.default_rng(42)
    cases = [fc_case(rng, 1, 1, 1), fc_case(rng, 2, 19, 7), fc_case(rng, 1, 23, 9, bias=False),
             fc_case(rng, 3, 32, 10),
             fc_case(rng, 1, 8, 7), fc_case(rng, 2, 48, 5, bias=False)]  # rows of 8k: two at a time, one left
    for i, c in enumerate(cases):
        c = _int4(rng, c, "w")
        assert np.array_equal(_fc_s4(host, c).ravel(), ref_fc(c).ravel()), i
    assert len(np.unique(ref_fc(cases[3]))) > 10
