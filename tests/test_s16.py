"""The shim's int16-activation ("16x8": int16 activations, int8 weights) functions, CMSIS-NN
v7.0.0's arm_convolve_s16, arm_depthwise_conv_s16, arm_fully_connected_s16, arm_max_pool_s16,
arm_avgpool_s16, arm_elementwise_add_s16 and arm_elementwise_mul_s16, against NumPy models of
TFLite's int16x8 reference arithmetic: exact int64 sums, the multiplier reduced to 16 bits (REDUCE_MULTIPLIER) and TFLite's
one-step rounding (arm_nn_requantize_s64 in 64 bits; CMSIS-NN v7.0.0's two steps give the same
within +-2^30 and wrap beyond: checked on its own). On the host through ctypes (the plain-C
paths) over odd shapes, and on QEMU's Cortex-M4 (the DSP paths: SMLAD / SMLAxy int32 sums of at
most 508 products, exact even where every product is 2^22, where CMSIS-NN v7.0.0's 512-product
sums wrap)."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest
from test_cmsis_nn import (DATA, SHIM, SHIM_INCLUDES, STRUCT, TARGET_CFLAGS, Activation, Context, ConvParams, Dims,
                           DwConvParams, FcParams, PerChannel, PerTensor, build_firmware, c_array, host, nn_call, ptr,
                           requantize, run_firmware, tile, wrap32)

from specializer.library import libjit
from specializer.tools import find_tool

__all__ = ["host"]  # the host library fixture, shared

BiasData, PoolParams = STRUCT["cmsis_nn_bias_data"], STRUCT["cmsis_nn_pool_params"]
I16 = (-32768, 32767)
# multipliers around REDUCE_MULTIPLIER's edges: its rounding tie (low half 0x8000), the last
# value it rounds (0x7FFEFFFF), and the 0x7FFF branch from 0x7FFF0000 up
EDGE_MULTS = [1 << 30, (1 << 30) + 0x7FFF, (1 << 30) + 0x8000, 0x5A5A8000, 0x7FFE8000, 0x7FFEFFFF, 0x7FFF0000,
              0x7FFF7FFF, 0x7FFF8000, 0x7FFFFFFF]


# =========================================================================== the int16x8 arithmetic


def reduce_mult(mult):
    """CMSIS-NN's REDUCE_MULTIPLIER (TFLite's reduced_multiplier): Q31 to Q15, rounded, 0x7FFF from 0x7FFF0000."""
    m = np.asarray(mult, np.int64)
    return np.where(m < 0x7FFF0000, (m + (1 << 15)) >> 16, 0x7FFF)


def rq64(acc, mult, shift):
    """TFLite's MultiplyByQuantizedMultiplier(int64 x, ...): (x * reduced + 2^(14 - shift)) >> (15 - shift),
    one rounding; its precondition |x| < 2^47 asserted."""
    acc, shift = np.asarray(acc, np.int64), np.asarray(shift, np.int64)
    assert np.all(np.abs(acc) < 1 << 47)
    total = 15 - shift
    return (acc * reduce_mult(mult) + (np.int64(1) << (total - 1))) >> total


def rq64_two_steps(val: int, reduced: int, shift: int) -> int:
    """arm_nn_requantize_s64 as v7.0.0 writes it: 64-bit product >> (14 - shift) into an int32, then (r + 1) >> 1."""
    r = wrap32((val * reduced) >> (14 - shift))
    return int(wrap32(int(r) + 1)) >> 1


def finish16(acc, bias, bias32, mult, shift, act):
    """Bias, requantization and clamp of exact sums (last axis: the channel). bias32: v7.0.0's int32
    bias, the sum and bias modulo 2^32 requantized by arm_nn_requantize (test_cmsis_nn's model)."""
    acc = np.asarray(acc, np.int64)
    if bias32:
        v = requantize(wrap32(acc + (0 if bias is None else bias.astype(np.int64))), mult, shift)
    else:
        v = rq64(acc + (0 if bias is None else bias), mult, shift)
    return np.clip(v, act[0], act[1]).astype(np.int16)


def fit_shifts(rng, acc, bias, mult, lo, hi, act=I16):
    """Per channel (last axis) the largest shift in [lo, hi] that keeps the channel's largest result
    within 1 to 4 times the clamp's (a few outputs clamped, most not; at lo, perhaps far more)."""
    total = np.asarray(acc, np.int64) + (0 if bias is None else np.asarray(bias, np.int64))
    peak = np.abs(total.reshape(-1, total.shape[-1])).max(axis=0)
    red = reduce_mult(mult)
    shifts = []
    for o in range(len(red)):
        def result(s, o=o):
            return (int(peak[o]) * int(red[o]) + (1 << (14 - s))) >> (15 - s)
        s, limit = hi, max(abs(act[0]), abs(act[1])) << int(rng.integers(0, 3))
        while s > lo and result(s) > limit:
            s -= 1
        shifts.append(s)
    return np.array(shifts, np.int32)


def mults(rng, n):
    """n multipliers: mostly the edge ones in turn, the others random Q31 ones in [2^30, 2^31)."""
    rand = rng.integers(1 << 30, (1 << 31) - 1, n, dtype=np.int64)
    return np.array([EDGE_MULTS[i] if i < len(EDGE_MULTS) and rng.random() < 0.6 else rand[i] for i in range(n)],
                    np.int64).astype(np.int32)  # fmt: skip


def values(rng, shape, amp, dtype):
    """Random values in [-amp, amp) (full range: int16's or int8's extremes included)."""
    lo, hi = (-amp, amp) if amp else ((-32768, 32768) if dtype == np.int16 else (-128, 128))
    return rng.integers(lo, hi, shape).astype(dtype)


def out_size(n, k, stride, pad_lo, pad_hi, dil):
    return (n + pad_lo + pad_hi - dil * (k - 1) - 1) // stride + 1


# =========================================================================== references


def acc_conv16(c):
    inp, filt = c["inp"].astype(np.int64), c["filt"].astype(np.int64)
    nb, ih, iw, ic = inp.shape
    oc, kh, kw, _ = filt.shape
    oh, ow = c["out_hw"]
    (sh, sw), (ph, pw), (dh, dw) = c["stride"], c["pad"], c["dil"]
    acc = np.zeros((nb, oh, ow, oc), np.int64)
    for oy in range(oh):
        for ox in range(ow):
            for ky in range(kh):
                for kx in range(kw):
                    iy, ix = oy * sh - ph + ky * dh, ox * sw - pw + kx * dw
                    if 0 <= iy < ih and 0 <= ix < iw:
                        acc[:, oy, ox, :] += inp[:, iy, ix, :] @ filt[:, ky, kx, :].T
    return acc


def acc_dw16(c):
    m = c["ch_mult"]
    inp = np.repeat(c["inp"].astype(np.int64), m, axis=3)
    filt = c["filt"].astype(np.int64)
    nb, ih, iw, _ = inp.shape
    _, kh, kw, oc = filt.shape
    oh, ow = c["out_hw"]
    (sh, sw), (ph, pw), (dh, dw) = c["stride"], c["pad"], c["dil"]
    acc = np.zeros((nb, oh, ow, oc), np.int64)
    for oy in range(oh):
        for ox in range(ow):
            for ky in range(kh):
                for kx in range(kw):
                    iy, ix = oy * sh - ph + ky * dh, ox * sw - pw + kx * dw
                    if 0 <= iy < ih and 0 <= ix < iw:
                        acc[:, oy, ox, :] += inp[:, iy, ix, :] * filt[0, ky, kx, :]
    return acc


def acc_fc16(c):
    return c["inp"].astype(np.int64) @ c["w"].astype(np.int64).T


def reference(c):
    if c["kind"] == "pool":
        return ref_pool(c)
    if c["kind"] == "add":
        return ref_add(c)
    if c["kind"] == "mul":
        return ref_mul(c)
    acc = {"conv": acc_conv16, "dw": acc_dw16, "fc": acc_fc16}[c["kind"]](c)
    return finish16(acc, c["bias"], c.get("bias32", False), c["mult"], c["shift"], c["act"])


def ref_pool(c):
    inp = c["inp"].astype(np.int64)
    nb, ih, iw, ch = inp.shape
    (kh, kw), (sh, sw), (ph, pw) = c["kernel"], c["stride"], c["pad"]
    oh, ow = c["out_hw"]
    out = np.zeros((nb, oh, ow, ch), np.int64)
    for oy in range(oh):
        for ox in range(ow):
            y0, x0 = oy * sh - ph, ox * sw - pw
            win = inp[:, max(y0, 0):min(y0 + kh, ih), max(x0, 0):min(x0 + kw, iw), :].reshape(nb, -1, ch)
            if c["max"]:
                out[:, oy, ox] = win.max(axis=1)
            else:
                s, n = win.sum(axis=1), win.shape[1]
                out[:, oy, ox] = np.where(s > 0, (s + n // 2) // n, -((-s + n // 2) // n))  # halves away from 0
    return np.clip(out, *c["act"]).astype(np.int16)


def ref_add(c):
    ls = c["left_shift"]
    a = requantize(wrap32(c["in1"].astype(np.int64) << ls), c["m1"], c["s1"])
    b = requantize(wrap32(c["in2"].astype(np.int64) << ls), c["m2"], c["s2"])
    return np.clip(requantize(wrap32(a + b), c["mo"], c["so"]), *c["act"]).astype(np.int16)


def ref_mul(c):
    """TFLite's int16 MUL: the product (at most 2^30, exact in int32) by arm_nn_requantize, clamped."""
    prod = c["in1"].astype(np.int64) * c["in2"].astype(np.int64)
    return np.clip(requantize(prod, c["mo"], c["so"]), *c["act"]).astype(np.int16)


# =========================================================================== cases


def conv_case(rng, nb, ih, iw, ic, oc, kh, kw, stride=(1, 1), pad=(0, 0), dil=(1, 1), bias="int64", amp=0,
              wamp=0, shifts=(-20, 5), act=I16, bias_amp="sums"):
    """bias: 'int64', 'int32', 'none64' or 'none32' (bias_data->data NULL, either flag), values up to
    the sums' size (bias_amp 'sums'), 2^36 ('int64') or int32's whole range ('int32'); amp / wamp:
    input / weight amplitude (0: the type's full range)."""
    c = {"kind": "conv", "stride": stride, "pad": pad, "dil": dil, "act": act,
         "out_hw": (out_size(ih, kh, stride[0], pad[0], pad[0], dil[0]), out_size(iw, kw, stride[1], pad[1], pad[1],
                                                                                    dil[1])),
         "inp": values(rng, (nb, ih, iw, ic), amp, np.int16), "filt": values(rng, (oc, kh, kw, ic), wamp, np.int8),
         "mult": mults(rng, oc), "bias32": bias.endswith("32")}  # fmt: skip
    acc = acc_conv16(c)
    big = {"sums": int(np.abs(acc).max()) + 1, "int64": 1 << 36, "int32": 1 << 31}[bias_amp]
    c["bias"] = {"int64": rng.integers(-big, big, oc, dtype=np.int64),
                 "int32": rng.integers(-big, min(big, 1 << 31), oc, dtype=np.int64).astype(np.int32)}.get(bias)
    c["shift"] = fit_shifts(rng, acc, c["bias"], c["mult"], *shifts, act)
    if c["bias32"]:  # arm_nn_requantize's shift range
        c["shift"] = np.clip(c["shift"], -31, 30)
    return c


def dw_case(rng, nb, ih, iw, ic, ch_mult, kh, kw, stride=(1, 1), pad=(0, 0), dil=(1, 1), bias=True, amp=0,
            shifts=(-20, 5), act=I16):
    oc = ic * ch_mult
    c = {"kind": "dw", "ch_mult": ch_mult, "stride": stride, "pad": pad, "dil": dil, "act": act,
         "out_hw": (out_size(ih, kh, stride[0], pad[0], pad[0], dil[0]), out_size(iw, kw, stride[1], pad[1], pad[1],
                                                                                    dil[1])),
         "inp": values(rng, (nb, ih, iw, ic), amp, np.int16), "filt": values(rng, (1, kh, kw, oc), 0, np.int8),
         "mult": mults(rng, oc)}
    acc = acc_dw16(c)
    big = (1 << 36) if bias == "big" else int(np.abs(acc).max()) + 1
    c["bias"] = rng.integers(-big, big, oc, dtype=np.int64) if bias else None
    c["shift"] = fit_shifts(rng, acc, c["bias"], c["mult"], *shifts, act)
    return c


def fc_case(rng, batch, depth, outs, bias=True, amp=0, shifts=(-20, 5), act=I16, mult=None):
    c = {"kind": "fc", "act": act, "inp": values(rng, (batch, depth), amp, np.int16),
         "w": values(rng, (outs, depth), 0, np.int8),
         "mult": int(mult if mult is not None else mults(rng, 1)[0])}
    big = (1 << 36) if bias == "big" else int(np.abs(acc_fc16(c)).max()) + 1
    c["bias"] = rng.integers(-big, big, outs, dtype=np.int64) if bias else None
    total = acc_fc16(c) + (0 if c["bias"] is None else c["bias"])  # one shift: every output's peak
    c["shift"] = int(fit_shifts(rng, total.reshape(-1, 1), None, np.array([c["mult"]]), *shifts, act)[0])
    return c


def extreme_fc_case(depth, outs, x, w, shift):
    """Every product x * w (2^22 for -32768 * -128): SMLAD's int32 blocks must stay exact."""
    return {"kind": "fc", "act": I16, "inp": np.full((1, depth), x, np.int16), "w": np.full((outs, depth), w, np.int8),
            "bias": None, "mult": 1 << 30, "shift": shift}


def extreme_dw_case(rng, k, ch):
    """A k x k window of products 2^22 (-32768 * -128), one output pixel per channel."""
    c = dw_case(rng, 1, k, k, ch, 1, k, k, bias=False)
    c["inp"][:] = -32768
    c["filt"][:] = -128
    c["shift"] = fit_shifts(rng, acc_dw16(c), None, c["mult"], -20, -20)
    return c


def pool_case(rng, nb, ih, iw, ch, kh, kw, stride=(1, 1), pad=(0, 0), is_max=True, act=I16):
    return {"kind": "pool", "max": is_max, "kernel": (kh, kw), "stride": stride, "pad": pad, "act": act,
            "out_hw": (out_size(ih, kh, stride[0], pad[0], pad[0], 1), out_size(iw, kw, stride[1], pad[1], pad[1], 1)),
            "inp": values(rng, (nb, ih, iw, ch), 0, np.int16)}  # fmt: skip


def add_case(rng, n, left_shift=15, act=I16, tflite=True):
    """TFLite's int16 ADD parameters (left_shift 15, input multipliers scaling to 2 * max scale) or
    random ones (the arithmetic, wrapping included)."""
    c = {"kind": "add", "act": act, "left_shift": left_shift, "in1": values(rng, n, 0, np.int16),
         "in2": values(rng, n, 0, np.int16)}
    if tflite:  # scales s1 <= s2: in1 * s1 / (2 s2), in2 / 2, out: (2 s2 / so) >> 15
        c |= {"m1": int(rng.integers(1 << 30, 1 << 31)), "s1": int(rng.integers(-6, 0)), "m2": 1 << 30, "s2": 0,
              "mo": int(rng.integers(1 << 30, 1 << 31)), "so": int(rng.integers(-16, -13))}
    else:
        c |= {"m1": int(rng.integers(1, 1 << 31)), "s1": int(rng.integers(-31, 3)), "m2": int(rng.integers(1, 1 << 31)),
              "s2": int(rng.integers(-31, 3)), "mo": int(rng.integers(1, 1 << 31)), "so": int(rng.integers(-31, 3))}
    return c


def mul_case(rng, n, act=I16, edges=False):
    """TFLite's int16 MUL: a multiplier of (s1 * s2 / so) below 1 (shift -14 .. -16 spreads the
    products over int16); `edges`: the inputs' extremes, -32768 * -32768 = 2^30 among them."""
    c = {"kind": "mul", "act": act, "in1": values(rng, n, 0, np.int16), "in2": values(rng, n, 0, np.int16),
         "mo": int(rng.integers(1 << 30, 1 << 31)), "so": int(rng.integers(-16, -13))}
    if edges:
        ext = np.array([-32768, 32767, -32768, 32767, 0, -1, 1, -32768], np.int16)
        c["in1"][:8], c["in2"][:8] = ext, np.array([-32768, 32767, 32767, -32768, -32768, -32768, 32767, 1], np.int16)
    return c


# =========================================================================== host (ctypes)


def conv_dims(c):
    nb, ih, iw, ic = c["inp"].shape
    oc, kh, kw, _ = c["filt"].shape
    return Dims(nb, ih, iw, ic), Dims(oc, kh, kw, ic), Dims(nb, *c["out_hw"], oc)


def run_conv(lib, c, with_buffer=True):
    """(output, status) of arm_convolve_s16 on the host; the scratch is exactly get_buffer_size bytes,
    then a canary nothing may touch."""
    in_dims, f_dims, o_dims = conv_dims(c)
    size = lib.arm_convolve_s16_get_buffer_size(ctypes.byref(in_dims), ctypes.byref(f_dims))
    assert size == 2 * f_dims.h * f_dims.w * in_dims.c * 2  # v7.0.0's: two int16 columns
    scratch = np.full(size + 64, 0xA5, np.uint8)
    ctx = Context(buf=scratch.ctypes.data if with_buffer else None, size=size)
    params = ConvParams(input_offset=0, output_offset=0, stride=tile(c["stride"]), padding=tile(c["pad"]),
                        dilation=tile(c["dil"]), activation=Activation(*c["act"]))
    bias = BiasData(data=None if c["bias"] is None else c["bias"].ctypes.data, is_int32_bias=c["bias32"])
    out = np.zeros((o_dims.n, o_dims.h, o_dims.w, o_dims.c), np.int16)
    st = nn_call(lib, "arm_convolve_s16", ctx=ctypes.byref(ctx), conv_params=ctypes.byref(params),
                 quant_params=ctypes.byref(PerChannel(multiplier=c["mult"].ctypes.data, shift=c["shift"].ctypes.data)),
                 input_dims=ctypes.byref(in_dims), input_data=ptr(c["inp"]), filter_dims=ctypes.byref(f_dims),
                 filter_data=ptr(c["filt"]), bias_dims=ctypes.byref(Dims(1, 1, 1, o_dims.c)),
                 bias_data=ctypes.byref(bias), output_dims=ctypes.byref(o_dims), output_data=ptr(out))  # fmt: skip
    assert (scratch[size:] == 0xA5).all(), "written past the scratch buffer"
    return out, st


def run_dw(lib, c):
    nb, ih, iw, ic = c["inp"].shape
    _, kh, kw, oc = c["filt"].shape
    out = np.zeros((nb, *c["out_hw"], oc), np.int16)
    params = DwConvParams(input_offset=0, output_offset=0, ch_mult=c["ch_mult"], stride=tile(c["stride"]),
                          padding=tile(c["pad"]), dilation=tile(c["dil"]), activation=Activation(*c["act"]))
    st = nn_call(lib, "arm_depthwise_conv_s16", ctx=ctypes.byref(Context(buf=None, size=0)),
                 dw_conv_params=ctypes.byref(params),
                 quant_params=ctypes.byref(PerChannel(multiplier=c["mult"].ctypes.data, shift=c["shift"].ctypes.data)),
                 input_dims=ctypes.byref(Dims(nb, ih, iw, ic)), input_data=ptr(c["inp"]),
                 filter_dims=ctypes.byref(Dims(1, kh, kw, oc)), filter_data=ptr(c["filt"]),
                 bias_dims=ctypes.byref(Dims(1, 1, 1, oc)), bias_data=ptr(c["bias"]),
                 output_dims=ctypes.byref(Dims(nb, *c["out_hw"], oc)), output_data=ptr(out))  # fmt: skip
    return out, st


def run_fc(lib, c):
    (batch, depth), outs = c["inp"].shape, c["w"].shape[0]
    out = np.zeros((batch, outs), np.int16)
    assert lib.arm_fully_connected_s16_get_buffer_size(ctypes.byref(Dims(depth, 1, 1, outs))) == 0
    params = FcParams(input_offset=0, filter_offset=0, output_offset=0, activation=Activation(*c["act"]))
    st = nn_call(lib, "arm_fully_connected_s16", ctx=ctypes.byref(Context(buf=None, size=0)),
                 fc_params=ctypes.byref(params), quant_params=ctypes.byref(PerTensor(c["mult"], c["shift"])),
                 input_dims=ctypes.byref(Dims(batch, 1, 1, depth)), input_data=ptr(c["inp"]),
                 filter_dims=ctypes.byref(Dims(depth, 1, 1, outs)), filter_data=ptr(c["w"]),
                 bias_dims=ctypes.byref(Dims(1, 1, 1, outs)), bias_data=ptr(c["bias"]),
                 output_dims=ctypes.byref(Dims(batch, 1, 1, outs)), output_data=ptr(out))  # fmt: skip
    return out, st


def run_pool(lib, c, with_buffer=True):
    nb, ih, iw, ch = c["inp"].shape
    oh, ow = c["out_hw"]
    params = PoolParams(stride=tile(c["stride"]), padding=tile(c["pad"]), activation=Activation(*c["act"]))
    out = np.zeros((nb, oh, ow, ch), np.int16)
    dims = dict(input_dims=ctypes.byref(Dims(nb, ih, iw, ch)), filter_dims=ctypes.byref(Dims(1, *c["kernel"], 1)),
                output_dims=ctypes.byref(Dims(nb, oh, ow, ch)))
    if c["max"]:
        st = nn_call(lib, "arm_max_pool_s16", ctx=ctypes.byref(Context(buf=None, size=0)),
                     pool_params=ctypes.byref(params), src=ptr(c["inp"]), dst=ptr(out), **dims)
    else:
        size = lib.arm_avgpool_s16_get_buffer_size(ow, ch)
        assert size == 0  # the host build has no DSP extension (v7.0.0's size there; 4 * ch on the target)
        scratch = np.zeros(4 * ch + 4, np.uint8)
        ctx = Context(buf=scratch.ctypes.data if with_buffer else None, size=size)
        st = nn_call(lib, "arm_avgpool_s16", ctx=ctypes.byref(ctx), pool_params=ctypes.byref(params),
                     input_data=ptr(c["inp"]), output_data=ptr(out), **dims)
    return out, st


def run_add(lib, c):
    out = np.zeros(len(c["in1"]), np.int16)
    st = nn_call(lib, "arm_elementwise_add_s16", input_1_vect=ptr(c["in1"]), input_2_vect=ptr(c["in2"]),
                 input_1_offset=7, input_1_mult=c["m1"], input_1_shift=c["s1"], input_2_offset=-9,
                 input_2_mult=c["m2"], input_2_shift=c["s2"], left_shift=c["left_shift"], output=ptr(out),
                 out_offset=5, out_mult=c["mo"], out_shift=c["so"], out_activation_min=c["act"][0],
                 out_activation_max=c["act"][1], block_size=len(out))  # the offsets are not read (v7.0.0)
    return out, st


def run_mul(lib, c):
    out = np.zeros(len(c["in1"]), np.int16)
    st = nn_call(lib, "arm_elementwise_mul_s16", input_1_vect=ptr(c["in1"]), input_2_vect=ptr(c["in2"]),
                 input_1_offset=7, input_2_offset=-9, output=ptr(out), out_offset=5, out_mult=c["mo"],
                 out_shift=c["so"], out_activation_min=c["act"][0], out_activation_max=c["act"][1],
                 block_size=len(out))  # the offsets are not read (v7.0.0)
    return out, st


RUN = {"conv": run_conv, "dw": run_dw, "fc": run_fc, "pool": run_pool, "add": run_add, "mul": run_mul}


def check(lib, cases):
    for i, c in enumerate(cases):
        got, st = RUN[c["kind"]](lib, c)
        want = reference(c)
        assert st == 0, (i, c["kind"], st)
        bad = np.flatnonzero(got.ravel() != want.ravel())
        assert not len(bad), (i, c["kind"], f"{len(bad)} of {want.size} differ, first at {bad[0]}: "
                              f"{got.ravel()[bad[0]]} != {want.ravel()[bad[0]]}")  # fmt: skip


@pytest.fixture(scope="module")
def rq(tmp_path_factory):
    """arm_nn_requantize_s64 and REDUCE_MULTIPLIER (inline in the shim's header) exported on the host."""
    src = tmp_path_factory.mktemp("rq") / "rq.c"
    src.write_text('#include "shim_nnsupportfunctions.h"\n'
                   "int32_t rq64(int64_t v, int32_t m, int32_t s) { return arm_nn_requantize_s64(v, m, s); }\n"
                   "int32_t reduce(int32_t m) { return REDUCE_MULTIPLIER(m); }\n")
    so = src.with_suffix(".so")
    subprocess.run([find_tool("gcc"), "-O2", "-Wall", "-Werror", "-shared", "-fPIC", *SHIM_INCLUDES, str(src), "-o",
                    str(so)], check=True)  # fmt: skip
    lib = ctypes.CDLL(str(so))
    lib.rq64.argtypes, lib.rq64.restype = [ctypes.c_int64, ctypes.c_int32, ctypes.c_int32], ctypes.c_int32
    lib.reduce.argtypes, lib.reduce.restype = [ctypes.c_int32], ctypes.c_int32
    return lib


def test_requantize_s64_is_tfl_one_step_rounding(rq):
    """arm_nn_requantize_s64 is TFLite's (product + 2^(14 - shift)) >> (15 - shift), saturated to
    int32, everywhere; CMSIS-NN v7.0.0's two steps ((product >> (14 - shift)) + 1) >> 1 give the
    same wherever the result is within +-2^30, and beyond, where their 32-bit intermediate (twice
    the result) wraps, a wrong value the shim does not copy."""
    rng = np.random.default_rng(160)
    assert [rq.reduce(m) for m in EDGE_MULTS] == reduce_mult(EDGE_MULTS).tolist()
    assert [rq.reduce(m) for m in (0x7FFEFFFF, 0x7FFF0000, 0x7FFFFFFF, 0x40008000, 0x40007FFF)] == \
        [0x7FFF, 0x7FFF, 0x7FFF, 0x4001, 0x4000]  # fmt: skip
    agree = ties = beyond = 0
    for _ in range(30000):
        mult = int(rng.choice(EDGE_MULTS)) if rng.random() < 0.3 else int(rng.integers(0, 1 << 31))
        shift = int(rng.integers(-31, 15))
        red = int(reduce_mult(mult))
        # values from tiny to TFLite's |x| < 2^47, and ties (an exact half before the last shift)
        val = int(rng.integers(-(1 << 47), 1 << 47)) >> int(rng.integers(0, 47))
        tie = ((int(rng.integers(-(1 << 20), 1 << 20)) * 2 + 1) << (14 - shift)) // max(red, 1)
        if rng.random() < 0.1 and abs(tie) < 1 << 47:
            val = tie
        got = rq.rq64(val, red, shift)
        one = (val * red + (1 << (14 - shift))) >> (15 - shift)
        assert got == min(max(one, -(1 << 31)), (1 << 31) - 1), (val, red, shift)
        if -(1 << 30) <= one < 1 << 30:
            assert got == rq64_two_steps(val, red, shift), (val, red, shift)
            agree += 1
            ties += (val * red) % (1 << (15 - shift)) == 1 << (14 - shift)
        else:
            beyond += 1
    assert agree > 20000 and ties > 300 and beyond > 100
    # where they part: TFLite's result -1633828154 (an int32, clamped to -32768 by the layer); the
    # two steps' intermediate -3267656308 wraps to v7.0.0's 513655494
    assert rq.rq64(-99724, 32767, 14) == -1633828154 and rq64_two_steps(-99724, 32767, 14) == 513655494


def test_convolve_s16_matches_numpy(host):
    rng = np.random.default_rng(161)
    cases = [
        conv_case(rng, 1, 5, 5, 3, 4, 3, 3, shifts=(-20, -8)),  # taps 27: 3 left after the fours
        conv_case(rng, 2, 7, 6, 5, 7, 3, 3, stride=(2, 1), pad=(1, 1), bias="none64"),  # odd channels, batch 2
        conv_case(rng, 1, 8, 7, 4, 6, 3, 2, dil=(2, 1), pad=(2, 0), bias="int32", shifts=(-31, -10)),
        conv_case(rng, 1, 9, 9, 6, 5, 3, 3, stride=(2, 2), pad=(1, 1), dil=(2, 2), act=(-1000, 2000)),
        conv_case(rng, 1, 1, 1, 1, 1, 1, 1),
        conv_case(rng, 2, 3, 5, 8, 3, 1, 1, bias="none32", shifts=(-31, -10)),  # 15 pixels: one left over
        # small values: shifts up to +5 and outputs that spread over int16
        conv_case(rng, 1, 6, 5, 7, 9, 2, 2, pad=(1, 1), amp=16, wamp=8, shifts=(-3, 5)),
        conv_case(rng, 1, 4, 6, 2, 26, 3, 3, pad=(1, 1), amp=64, wamp=16, shifts=(-6, 5), act=(-300, 301)),
        conv_case(rng, 1, 5, 4, 9, 4, 3, 3, stride=(2, 2), bias="int32", amp=300, shifts=(-12, 0)),
        conv_case(rng, 1, 3, 3, 150, 3, 2, 2, pad=(1, 1), shifts=(-20, -10)),  # 600 taps: two blocks
        conv_case(rng, 1, 4, 5, 3, 4, 2, 2, bias_amp="int64"),  # biases up to 2^36: beyond int32
        conv_case(rng, 1, 5, 4, 5, 3, 3, 3, pad=(1, 1), bias="int32", bias_amp="int32", shifts=(-31, -10)),
    ]
    check(host, cases)
    assert len(np.unique(reference(cases[6]))) > 50  # outputs spread, not all clamped


def test_convolve_s16_arguments(host):
    rng = np.random.default_rng(162)
    c = conv_case(rng, 1, 4, 4, 3, 2, 3, 3)
    assert run_conv(host, c, with_buffer=False)[1] == -1  # ARM_CMSIS_NN_ARG_ERROR: v7.0.0 needs ctx->buf
    # a multiplier per channel across REDUCE_MULTIPLIER's edges, and shifts -20 .. 5 each in turn
    c = conv_case(rng, 1, 3, 3, 2, len(EDGE_MULTS), 1, 1, amp=40, wamp=20)
    c["mult"] = np.array(EDGE_MULTS, np.int64).astype(np.int32)
    for shift in range(-20, 6):
        c["shift"] = np.full(len(EDGE_MULTS), shift, np.int32)
        c["inp"] = (values(rng, c["inp"].shape, 40, np.int16).astype(np.int64) << max(0, -shift - 2)).clip(
            *I16).astype(np.int16)  # fmt: skip
        c["bias"] = rng.integers(-(1 << 12), 1 << 12, len(EDGE_MULTS), dtype=np.int64) << max(0, -shift - 2)
        check(host, [c])


def test_depthwise_conv_s16_matches_numpy(host):
    rng = np.random.default_rng(163)
    cases = [
        dw_case(rng, 1, 6, 5, 5, 1, 3, 3, pad=(1, 1)),
        dw_case(rng, 1, 7, 8, 7, 2, 3, 3, stride=(2, 2), pad=(1, 0), bias=False),  # multiplier 2
        dw_case(rng, 2, 5, 6, 3, 3, 2, 3, pad=(0, 1), act=(-2000, 1500)),  # multiplier 3, batch 2
        dw_case(rng, 1, 9, 9, 4, 1, 3, 3, pad=(2, 2), dil=(2, 2)),
        dw_case(rng, 1, 8, 7, 3, 2, 3, 2, stride=(1, 2), pad=(2, 1), dil=(2, 1), bias=False),
        dw_case(rng, 1, 1, 1, 1, 1, 1, 1, bias="big"),
        dw_case(rng, 1, 5, 5, 6, 1, 5, 5, pad=(2, 2), amp=50, shifts=(-3, 1)),
        dw_case(rng, 2, 6, 6, 2, 3, 3, 3, stride=(2, 2), pad=(1, 1), amp=200, shifts=(-8, 2), act=(-100, 100)),
        dw_case(rng, 2, 6, 7, 14, 1, 5, 5, stride=(2, 2), pad=(2, 2), bias="big"),
        extreme_dw_case(rng, 23, 4),
    ]
    check(host, cases)
    assert len(np.unique(reference(cases[6]))) > 50
    bad = dict(cases[0], ch_mult=2)  # C_OUT 5 is not C_IN 5 * 2
    assert run_dw(host, bad)[1] == -1


def test_fully_connected_s16_matches_numpy(host):
    rng = np.random.default_rng(164)
    cases = [fc_case(rng, 1, 1, 1, bias="big"), fc_case(rng, 2, 19, 7), fc_case(rng, 1, 23, 9, bias=False),
             fc_case(rng, 3, 32, 10, act=(-500, 700)), fc_case(rng, 1, 600, 5),
             fc_case(rng, 2, 13, 4, amp=30, shifts=(-2, 5)), fc_case(rng, 1, 40, 8, amp=100, shifts=(-3, 0))]
    cases += [fc_case(rng, 1, 17, 6, mult=m) for m in EDGE_MULTS]
    cases += [extreme_fc_case(1100, 4, -32768, -128, -20), extreme_fc_case(1021, 5, 32767, -128, -20)]
    check(host, cases)
    assert len(np.unique(reference(cases[6]))) > 5


def test_pools_s16_match_numpy(host):
    rng = np.random.default_rng(165)
    cases = []
    for is_max in (True, False):
        cases += [pool_case(rng, 1, 6, 5, 3, 2, 2, stride=(2, 2), is_max=is_max),
                  pool_case(rng, 2, 7, 7, 5, 3, 3, stride=(2, 2), pad=(1, 1), is_max=is_max, act=(-1000, 900)),
                  pool_case(rng, 1, 5, 6, 4, 3, 2, pad=(1, 0), is_max=is_max),
                  pool_case(rng, 1, 4, 4, 1, 4, 4, is_max=is_max),
                  pool_case(rng, 1, 9, 3, 2, 5, 3, stride=(1, 3), pad=(2, 1), is_max=is_max, act=(-5, 5))]
    check(host, cases)
    # ties round away from zero: windows of 2 summing to odd values
    tie = pool_case(rng, 1, 1, 2, 4, 1, 2, is_max=False)
    tie["inp"] = np.array([[[[3, -3, 1, -1], [0, 0, 0, 0]]]], np.int16)
    assert run_pool(host, tie)[0].ravel().tolist() == [2, -2, 1, -1] == ref_pool(tie).ravel().tolist()
    # v7.0.0's argument checks: no batch; a window over padding only
    assert run_pool(host, dict(cases[5], inp=cases[5]["inp"][:0]))[1] == -1
    assert run_pool(host, dict(cases[0], inp=cases[0]["inp"][:0]))[1] == -1
    assert run_pool(host, dict(cases[5], pad=(3, 3), out_hw=(1, 1)))[1] == -1


def test_elementwise_add_s16_matches_numpy(host):
    rng = np.random.default_rng(166)
    cases = [add_case(rng, n) for n in (1, 2, 7, 33, 100)]
    cases += [add_case(rng, 9, act=(-100, 50)), add_case(rng, 16, left_shift=0, tflite=False),
              add_case(rng, 31, left_shift=15, tflite=False), add_case(rng, 20, left_shift=20, tflite=False)]
    check(host, cases)
    assert len(np.unique(reference(cases[4]))) > 60


def test_elementwise_mul_s16_matches_numpy(host):
    rng = np.random.default_rng(168)
    cases = [mul_case(rng, n) for n in (1, 2, 7, 33, 100)] + [mul_case(rng, 9, act=(-100, 50)),
                                                             mul_case(rng, 16, edges=True)]
    check(host, cases)
    assert len(np.unique(reference(cases[4]))) > 60


# =========================================================================== target (QEMU: the DSP paths)


def _dims(name, d):
    return f"const cmsis_nn_dims {name} = {{{d[0]}, {d[1]}, {d[2]}, {d[3]}}};"


def emit(i: int, c: dict) -> tuple[str, str]:
    """(definitions, statements) running case i on the target and printing 'case<i> ...'."""
    p, d = f"c{i}_", []
    n_out = reference(c).size
    act = f"{{{c['act'][0]}, {c['act'][1]}}}"
    d.append(f"static int16_t {p}o[{n_out}];\n")
    if c["kind"] in ("conv", "dw"):
        nb, ih, iw, ic = c["inp"].shape
        oh, ow = c["out_hw"]
        f = c["filt"].shape
        oc = f[0] if c["kind"] == "conv" else f[3]
        d += [c_array(p + "x", c["inp"], "const int16_t"), c_array(p + "f", c["filt"], "const int8_t"),
              c_array(p + "m", c["mult"], "int32_t"), c_array(p + "s", c["shift"], "int32_t")]
        geo = (f"{{{c['stride'][1]}, {c['stride'][0]}}}, {{{c['pad'][1]}, {c['pad'][0]}}}, "
               f"{{{c['dil'][1]}, {c['dil'][0]}}}, {act}")
        head = f"{_dims('id', (nb, ih, iw, ic))} {_dims('fd', f)} {_dims('bd', (1, 1, 1, oc))} " \
               f"{_dims('od', (nb, oh, ow, oc))}\n    const cmsis_nn_per_channel_quant_params q = {{{p}m, {p}s}};"
        if c["kind"] == "conv":
            btype = "const int32_t" if c["bias32"] else "const int64_t"
            d.append(c_array(p + "b", c["bias"], btype))
            off = c.get("scratch_offset", 0)
            stmt = f"""{{
    {head}
    const cmsis_nn_conv_params cp = {{0, 0, {geo}}};
    const int32_t size = arm_convolve_s16_get_buffer_size(&id, &fd);
    if (size != {2 * f[1] * f[2] * ic * 2} || size + {off} + 16 > (int32_t)sizeof scratch) return 2;
    uint8_t *buf = scratch + {off};
    for (int k = 0; k < 16; k++) buf[size + k] = 0xA5;
    const cmsis_nn_context ctx = {{buf, size}};
    const cmsis_nn_bias_data bias = {{{p}b, {int(c['bias32'])}}};
    if (arm_convolve_s16(&ctx, &cp, &q, &id, {p}x, &fd, {p}f, &bd, &bias, &od, {p}o) != ARM_CMSIS_NN_SUCCESS)
        return 1;
    for (int k = 0; k < 16; k++) if (buf[size + k] != 0xA5) return 4;
  }}"""
        else:
            d.append(c_array(p + "b", c["bias"], "const int64_t"))
            stmt = f"""{{
    {head}
    const cmsis_nn_dw_conv_params cp = {{0, 0, {c['ch_mult']}, {geo}}};
    const cmsis_nn_context ctx = {{0, 0}};
    if (arm_depthwise_conv_s16(&ctx, &cp, &q, &id, {p}x, &fd, {p}f, &bd, {p}b, &od, {p}o) != ARM_CMSIS_NN_SUCCESS)
        return 1;
  }}"""
    elif c["kind"] == "fc":
        (batch, depth), outs = c["inp"].shape, c["w"].shape[0]
        d += [c_array(p + "x", c["inp"], "const int16_t"), c_array(p + "w", c["w"], "const int8_t"),
              c_array(p + "b", c["bias"], "const int64_t")]
        stmt = f"""{{
    {_dims('id', (batch, 1, 1, depth))} {_dims('fd', (depth, 1, 1, outs))} {_dims('bd', (1, 1, 1, outs))}
    {_dims('od', (batch, 1, 1, outs))}
    const cmsis_nn_fc_params fp = {{0, 0, 0, {act}}};
    const cmsis_nn_per_tensor_quant_params q = {{{c['mult']}, {c['shift']}}};
    const cmsis_nn_context ctx = {{0, 0}};
    if (arm_fully_connected_s16_get_buffer_size(&fd) != 0) return 2;
    if (arm_fully_connected_s16(&ctx, &fp, &q, &id, {p}x, &fd, {p}w, &bd, {p}b, &od, {p}o) != ARM_CMSIS_NN_SUCCESS)
        return 1;
  }}"""
    elif c["kind"] == "pool":
        nb, ih, iw, ch = c["inp"].shape
        oh, ow = c["out_hw"]
        d.append(c_array(p + "x", c["inp"], "const int16_t"))
        pp = f"{{{{{c['stride'][1]}, {c['stride'][0]}}}, {{{c['pad'][1]}, {c['pad'][0]}}}, {act}}}"
        fn = "arm_max_pool_s16" if c["max"] else "arm_avgpool_s16"
        size = "0" if c["max"] else f"arm_avgpool_s16_get_buffer_size({ow}, {ch})"
        stmt = f"""{{
    {_dims('id', (nb, ih, iw, ch))} {_dims('fd', (1, *c['kernel'], 1))} {_dims('od', (nb, oh, ow, ch))}
    const cmsis_nn_pool_params pp = {pp};
    const int32_t size = {size};
    if (size != {0 if c['max'] else 4 * ch}) return 2;
    const cmsis_nn_context ctx = {{size ? scratch : 0, size}};
    if ({fn}(&ctx, &pp, &id, {p}x, &fd, &od, {p}o) != ARM_CMSIS_NN_SUCCESS) return 1;
  }}"""
    elif c["kind"] == "mul":
        d += [c_array(p + "a", c["in1"], "const int16_t"), c_array(p + "b", c["in2"], "const int16_t")]
        stmt = (f"if (arm_elementwise_mul_s16({p}a, {p}b, 0, 0, {p}o, 0, {c['mo']}, {c['so']}, {c['act'][0]}, "
                f"{c['act'][1]}, {n_out}) != ARM_CMSIS_NN_SUCCESS) return 1;")
    else:
        d += [c_array(p + "a", c["in1"], "const int16_t"), c_array(p + "b", c["in2"], "const int16_t")]
        stmt = (f"if (arm_elementwise_add_s16({p}a, {p}b, 0, {c['m1']}, {c['s1']}, 0, {c['m2']}, {c['s2']}, "
                f"{c['left_shift']}, {p}o, 0, {c['mo']}, {c['so']}, {c['act'][0]}, {c['act'][1]}, {n_out}) "
                f"!= ARM_CMSIS_NN_SUCCESS) return 1;")
    out = f'io_str("case{i}");\n  for (int i = 0; i < {n_out}; i++) io_hex32((uint32_t)(int32_t){p}o[i]);\n' \
          f'  io_str("\\n");'
    return "".join(d), stmt + "\n  " + out


def target_cases(rng):
    cases = [
        conv_case(rng, 1, 5, 5, 3, 4, 3, 3, shifts=(-20, -8)),
        dict(conv_case(rng, 2, 7, 6, 5, 7, 3, 3, stride=(2, 1), pad=(1, 1), bias="none64"), scratch_offset=2),
        conv_case(rng, 1, 8, 7, 4, 6, 3, 2, dil=(2, 1), pad=(2, 0), bias="int32", shifts=(-31, -10)),
        conv_case(rng, 1, 9, 9, 8, 5, 3, 3, stride=(2, 2), pad=(1, 1), dil=(2, 2), act=(-1000, 2000)),
        conv_case(rng, 2, 3, 5, 8, 3, 1, 1, bias="none32", shifts=(-31, -10)),  # groups of 4 from words
        conv_case(rng, 1, 6, 5, 7, 9, 2, 2, pad=(1, 1), amp=16, wamp=8, shifts=(-3, 5)),
        dict(conv_case(rng, 1, 3, 3, 150, 3, 2, 2, pad=(1, 1), shifts=(-20, -10)), scratch_offset=6),  # 2 blocks
        conv_case(rng, 1, 1, 1, 1, 1, 1, 1, bias_amp="int64"),
        # 1101 taps (3 blocks, one tap left), an odd channel count: v7.0.0's last channel sums
        # 3 taps past its row here
        conv_case(rng, 1, 2, 1, 1101, 3, 1, 1, amp=3000),
    ]
    # every product 2^22 over 1100 taps (three SMLAD blocks, 508 + 508 + 84): exact only if each
    # int32 block sum stays below 2^31; v7.0.0's 512-product sums would wrap here
    ext = conv_case(rng, 1, 2, 1, 1100, 3, 1, 1)
    ext["inp"][:] = -32768
    ext["filt"][:] = -128
    ext["filt"][1, ..., ::3] = 127
    ext["bias"][:] = 0
    ext["shift"] = fit_shifts(rng, acc_conv16(ext), ext["bias"], ext["mult"], -20, -20)
    cases.append(ext)
    cases += [dw_case(rng, 1, 6, 5, 5, 1, 3, 3, pad=(1, 1)), dw_case(rng, 2, 5, 6, 3, 3, 2, 3, pad=(0, 1)),
              dw_case(rng, 1, 9, 9, 4, 2, 3, 3, pad=(2, 2), dil=(2, 2), bias=False),
              # ch_mult 1: four channels a trip (SMLABB .. SMLATT), partial windows, dilation
              dw_case(rng, 1, 9, 9, 8, 1, 3, 3, pad=(2, 2), dil=(2, 2)),
              dw_case(rng, 2, 6, 7, 14, 1, 5, 5, stride=(2, 2), pad=(2, 2), bias="big"),
              extreme_dw_case(rng, 5, 4), extreme_dw_case(rng, 23, 4)]  # 529 taps: beyond the int32 sums
    cases += [fc_case(rng, 1, 1, 1), fc_case(rng, 2, 19, 7), fc_case(rng, 1, 23, 9, bias=False),
              fc_case(rng, 3, 32, 10, act=(-500, 700)), fc_case(rng, 1, 600, 5), fc_case(rng, 1, 40, 8, amp=100,
                                                                                          shifts=(-6, 3)),
              extreme_fc_case(1100, 4, -32768, -128, -20), extreme_fc_case(1021, 5, 32767, -128, -20)]  # fmt: skip
    for is_max in (True, False):
        cases += [pool_case(rng, 2, 7, 7, 5, 3, 3, stride=(2, 2), pad=(1, 1), is_max=is_max, act=(-1000, 900)),
                  pool_case(rng, 1, 5, 6, 4, 3, 2, pad=(1, 0), is_max=is_max)]
    cases += [add_case(rng, 33), add_case(rng, 20, left_shift=20, tflite=False)]
    cases += [mul_case(rng, 33, edges=True), mul_case(rng, 20, act=(-700, 900))]  # pairs, and an odd last one
    return cases


def test_s16_kernels_on_cortex_m4(tmp_path):
    """The DSP paths (SMLAD over repacked halfword pairs, blocks of 508 products) on QEMU's Cortex-M4:
    every case equals the model; scratch buffers at an odd halfword work and are not overrun."""
    cases = target_cases(np.random.default_rng(167))
    defs, stmts = zip(*(emit(i, c) for i, c in enumerate(cases)))
    main = tmp_path / "s16.c"
    main.write_text('#include <stdint.h>\n#include "libjit_cmsis_nn.h"\n#include "io.h"\n\n'
                    "static uint8_t scratch[8192] __attribute__((aligned(4)));\n" + "".join(defs)
                    + "\nint main(void)\n{\n  " + "\n  ".join(stmts) + '\n  io_str("end\\n");\n  io_flush();\n'
                    "  return 0;\n}\n")  # fmt: skip
    srcs = [main, DATA / "io.c", *sorted((SHIM / "src").glob("*.c"))]
    res = run_firmware(build_firmware(tmp_path, "s16", srcs))
    for i, c in enumerate(cases):
        got = wrap32(res[f"case{i}"])
        assert np.array_equal(got, reference(c).ravel().astype(np.int64)), (i, c["kind"])


def test_s16_inner_loops_use_dsp_instructions():
    """With the DSP extension the conv and fully connected inner loops are SMLAD on SXTB16-widened
    weights (conv: inputs repacked by PKHBT/PKHTB into the scratch columns; FC: in the loop), the
    depthwise one SMLABB .. SMLATT."""
    dsp = {"arm_convolve_s16.c": {"smlad", "sxtb16", "pkhbt", "pkhtb"},
           "arm_fully_connected_s16.c": {"smlad", "sxtb16", "pkhbt", "pkhtb"},
           "arm_depthwise_conv_s16.c": {"smlabb", "smlatb", "smlabt", "smlatt", "sxtb16"}}
    for src, want in dsp.items():
        asm = subprocess.run([find_tool("clang-19"), *TARGET_CFLAGS, *SHIM_INCLUDES, *libjit._newlib_include(),
                              "-S", "-o", "-", str(SHIM / "src" / src)],
                             check=True, capture_output=True, text=True).stdout  # fmt: skip
        ops = [ln.split()[0] for ln in asm.splitlines() if ln.startswith("\t") and ln.split()]
        assert want <= set(ops), src
