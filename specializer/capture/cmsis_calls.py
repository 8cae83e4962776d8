"""Lower the int8 blocks capture sees as custom calls (specializer/quant/calls.py) onto CMSIS-NN.

One custom call "cmsis_nn.<op>" becomes one call of CMSIS-NN's s8 function with CMSIS-NN
v7.0.0's signature (the shim's), every struct and per-channel array a constant global named
after the block's scope: convolve_s8 and depthwise_conv_s8 call the form that
arm_convolve_wrapper_s8 / arm_depthwise_conv_wrapper_s8 (the calls TFLite Micro makes) pick for
the block's shapes -- the shapes are known here, so capture makes the wrapper's choice as an
ahead-of-time compiler does, and O2 sees the form's own code at the call --, fully_connected_s8
-> arm_fully_connected_s8. Where the form a wrapper would pick is not exact for the block (v7.0.0's 1x1 forms assume no bottom/right padding, its
3x3 depthwise form a window's middle column inside the input, its _opt form every window
overlapping the input's rows), the block calls arm_convolve_s8 (upscale_dims NULL) /
arm_depthwise_conv_s8 directly; the capture log says which form and why. A block with int4
weights (its op ends in _s4; the filter operand is packed) calls arm_convolve_s4,
arm_depthwise_conv_s4 or arm_fully_connected_s4; one with int16 activations (the 16x8 scheme,
its op ends in _s16; the bias int64, carried as int32 words) arm_convolve_s16,
arm_depthwise_conv_s16 or arm_fully_connected_s16. Arguments and struct fields are given by name;
specializer/library/cmsis_api.py's tables put them in C's order.

The scratch buffer (cmsis_nn_context.buf) is the memory plan's shared scratch global, sized
with v7.0.0's *_get_buffer_size formulas for a DSP core without Helium built by clang
(the wrapper's: the size of the form it picks), computed here (the shim's functions return the
same). Anything that does not line up with the block's parameters (dtypes, shapes, layouts, an
output sharing memory with an input) raises NotLowerable: capture then captures again with
every block left to XLA and logs why.
"""

from __future__ import annotations

import dataclasses
import math

from specializer.capture.libcalls import Operand
from specializer.capture.thunks import Const, LibCall
from specializer.library import cmsis_api
from specializer.quant.params import packed_size


class NotLowerable(Exception):
    """A block's custom call that cannot become its CMSIS-NN call exactly."""


def _struct(name: str, struct: str, **fields) -> Const:
    """A constant CMSIS-NN struct, its fields by name (cmsis_api.STRUCTS)."""
    return Const(name, *cmsis_api.struct_const(struct, **fields))


def _call(fn: str, scratch: int = 0, **args) -> LibCall:
    """A call of CMSIS-NN function `fn`, its arguments by parameter name (cmsis_api.FUNCTIONS)."""
    return LibCall(fn, cmsis_api.call_args(fn, **args), ret=cmsis_api.llvm_ret(fn), scratch=scratch)


def _dims(name: str, d) -> Const:
    n, h, w, c = d
    return _struct(name, "cmsis_nn_dims", n=n, h=h, w=w, c=c)


def _activation(lo_hi) -> dict:
    lo, hi = lo_hi
    return {"min": lo, "max": hi}


def _array(name: str, ty: str, values) -> Const:
    """A constant array of integers of LLVM type `ty` (per-channel parameters, tables)."""
    return Const(name, f"[{len(values)} x {ty}]", "[" + ", ".join(f"{ty} {int(v)}" for v in values) + "]")


def _context(name: str, size: int) -> Const:
    return _struct(name, "cmsis_nn_context", buf="{scratch}" if size else None, size=size)


def _per_channel(scope: str, mults, shifts, n: int) -> Const:
    """cmsis_nn_per_channel_quant_params expanded to one pair per channel (a per-tensor block
    repeats its pair)."""
    mults = list(mults) * (n // len(mults)) if len(mults) == 1 else list(mults)
    shifts = list(shifts) * (n // len(shifts)) if len(shifts) == 1 else list(shifts)
    m, s = _array(f"{scope}.multiplier", "i32", mults), _array(f"{scope}.shift", "i32", shifts)
    t, init = cmsis_api.struct_const("cmsis_nn_per_channel_quant_params", multiplier=f'@"{m.name}"',
                                     shift=f'@"{s.name}"')
    return Const(f"{scope}.quant_params", t, init, (m, s))


def _round_up_4(v: int) -> int:
    return (v + 3) & ~3


def convolve_s8_buffer_size(filter_dims, input_c: int) -> int:
    """arm_convolve_s8_get_buffer_size (v7.0.0 without Helium, and the shim): two int16 im2col
    columns, depth rounded up to 4."""
    _, kh, kw, _ = filter_dims
    return 2 * _round_up_4(kh * kw * input_c) * 2


def convolve_wrapper_s8_form(p: dict) -> str:
    """The function arm_convolve_wrapper_s8 (v7.0.0, no Helium) hands conv block `p` to (dilation 1)."""
    (top, _), (left, _) = p["padding"]
    sh, sw = p["stride"]
    _, kh, kw, ck = p["filter_dims"]
    _, in_h, _, in_c = p["input_dims"]
    if top == 0 and left == 0 and kh == 1 and kw == 1 and in_c == ck:
        return "arm_convolve_1x1_s8_fast" if (sh, sw) == (1, 1) else "arm_convolve_1x1_s8"
    if in_h == 1 and kh == 1 and (sw * in_c) % 4 == 0 and in_c == ck:
        return "arm_convolve_1_x_n_s8"
    return "arm_convolve_s8"


def convolve_wrapper_s8_buffer_size(p: dict) -> int:
    """arm_convolve_wrapper_s8_get_buffer_size (v7.0.0 with the DSP extension, not built by Arm
    Compiler 6): 0 for the 1x1 forms (its 1x1 test does not compare C_IN with the filter's),
    else arm_convolve_s8's (the 1xN form's size without Helium)."""
    (top, _), (left, _) = p["padding"]
    _, kh, kw, _ = p["filter_dims"]
    if top == 0 and left == 0 and kh == 1 and kw == 1:
        return 0
    return convolve_s8_buffer_size(p["filter_dims"], p["input_dims"][3])


def depthwise_conv_wrapper_s8_form(p: dict) -> str:
    """The function arm_depthwise_conv_wrapper_s8 (v7.0.0, no Helium) hands depthwise block `p` to."""
    (top, _), (left, _) = p["padding"]
    _, kh, kw, _ = p["filter_dims"]
    if p["ch_mult"] == 1 and p["input_dims"][0] == 1:
        if (kh, kw) == (3, 3) and top <= 1 and left <= 1:
            return "arm_depthwise_conv_3x3_s8"
        return "arm_depthwise_conv_s8_opt"
    return "arm_depthwise_conv_s8"


def depthwise_conv_wrapper_s8_buffer_size(p: dict) -> int:
    """arm_depthwise_conv_wrapper_s8_get_buffer_size (v7.0.0 with the DSP extension): the _opt
    form's int16 window column of C_IN x KH x KW, none for the others."""
    _, kh, kw, _ = p["filter_dims"]
    form = depthwise_conv_wrapper_s8_form(p)
    return p["input_dims"][3] * kh * kw * 2 if form == "arm_depthwise_conv_s8_opt" else 0


def _inexact(form: str, p: dict) -> str:
    """Why CMSIS-NN v7.0.0's `form` would not compute block `p` exactly ("" when it does)."""
    (top, bottom), (left, right) = p["padding"]
    sh, sw = p["stride"]
    _, in_h, in_w, _ = p["input_dims"]
    _, out_h, out_w, _ = p["output_dims"]
    _, kh, _, _ = p["filter_dims"]
    if form in ("arm_convolve_1x1_s8_fast", "arm_convolve_1x1_s8") and (bottom, right) != (0, 0):
        return f"{form} assumes no bottom/right padding (here {bottom}, {right})"
    if form == "arm_depthwise_conv_3x3_s8" and (out_w - 1) * sw - left + 2 > in_w:
        return f"{form} reads a window's middle column, right of the input here (right padding {right})"
    if form == "arm_depthwise_conv_s8_opt" and (top > kh or (out_h - 1) * sh - top > in_h):
        return f"{form} assumes every window overlaps the input's rows (padding {top}, {bottom})"
    if form == "arm_depthwise_conv_s8_opt" and max(in_h, in_w, out_h, out_w) >= 1 << 15:
        return f"{form} keeps window positions in 16 bits"
    return ""


def _check(op: Operand, dtype: str, dims, what: str, scope: str) -> None:
    if op.dtype != dtype or tuple(op.dims) != tuple(dims):
        raise NotLowerable(f"{scope}: {what} is {op}, the block's parameters say {dtype}{list(dims)}")
    if tuple(op.minor_to_major) != tuple(reversed(range(len(op.dims)))):
        raise NotLowerable(f"{scope}: {what} {op} is not row-major")


def _overlap(a: Operand, b: Operand) -> bool:
    x, y = a.slice, b.slice
    return x.alloc == y.alloc and x.offset < y.offset + y.size and y.offset < x.offset + x.size


def _filter(w: Operand, p: dict, dims, scope: str) -> None:
    """The filter operand: int8 of the block's filter shape, or its int4 weights packed (1-D)."""
    if p.get("weight_bits", 8) == 4:
        _check(w, "s8", (packed_size(math.prod(dims)),), "packed int4 filter", scope)
    else:
        _check(w, "s8", dims, "filter", scope)


def _window(p: dict, dilated: bool = False) -> dict:
    """The conv params' fields; the dilation 1 unless `dilated` (the s16 calls: the s8 ones are
    given undilated blocks only, calls.unsupported)."""
    (top, _), (left, _) = p["padding"]
    sh, sw = p["stride"]
    dh, dw = p.get("dilation", (1, 1)) if dilated else (1, 1)
    return {"input_offset": p["input_offset"], "output_offset": p["output_offset"],
            "stride": {"w": sw, "h": sh}, "padding": {"w": left, "h": top}, "dilation": {"w": dw, "h": dh},
            "activation": _activation(p["activation"])}


def _conv_s4(scope: str, p: dict, x: Operand, w: Operand, bias: Operand | None, out: Operand) -> LibCall:
    """arm_convolve_s4 / arm_depthwise_conv_s4, the general functions (the shim has only these; they
    cover every shape the wrappers' forms do)."""
    conv = p["op"] == "convolve_s4"
    cout = p["filter_dims"][0] if conv else p["filter_dims"][3]
    _check(x, "s8", p["input_dims"], "input", scope)
    _filter(w, p, p["filter_dims"], scope)
    _check(out, "s8", p["output_dims"], "output", scope)
    if bias is not None:
        _check(bias, "s32", (cout,), "bias", scope)
    data = dict(input_dims=_dims(f"{scope}.input_dims", p["input_dims"]),
                filter_dims=_dims(f"{scope}.filter_dims", p["filter_dims"]),
                bias_dims=_dims(f"{scope}.bias_dims", (1, 1, 1, cout)),
                output_dims=_dims(f"{scope}.output_dims", p["output_dims"]),
                quant_params=_per_channel(scope, p["multipliers"], p["shifts"], cout))
    bias_slice = bias.slice if bias else None
    if conv:  # arm_convolve_s8's size: at least v7.0.0's arm_convolve_s4_get_buffer_size (2 * 2 * taps)
        scratch = convolve_s8_buffer_size(p["filter_dims"], p["input_dims"][3])
        return _call("arm_convolve_s4", scratch, ctx=_context(f"{scope}.ctx", scratch),
                     conv_params=_struct(f"{scope}.params", "cmsis_nn_conv_params", **_window(p)),
                     input_data=x.slice, filter_data=w.slice, bias_data=bias_slice, output_data=out.slice, **data)
    # v7.0.0 names this function's data parameters input, kernel, bias, output
    return _call("arm_depthwise_conv_s4", 0, ctx=_context(f"{scope}.ctx", 0),
                 dw_conv_params=_struct(f"{scope}.params", "cmsis_nn_dw_conv_params", ch_mult=p["ch_mult"],
                                        **_window(p)),
                 input=x.slice, kernel=w.slice, bias=bias_slice, output=out.slice, **data)


def _conv(scope: str, p: dict, x: Operand, w: Operand, bias: Operand | None, out: Operand) -> LibCall:
    op = p["op"]
    cout = p["filter_dims"][0] if op == "convolve_s8" else p["filter_dims"][3]
    _check(x, "s8", p["input_dims"], "input", scope)
    _check(w, "s8", p["filter_dims"], "filter", scope)
    _check(out, "s8", p["output_dims"], "output", scope)
    if bias is not None:
        _check(bias, "s32", (cout,), "bias", scope)
    window = _window(p)
    if op == "convolve_s8":
        form = convolve_wrapper_s8_form(p)
        fn, scratch, generic = "arm_convolve_wrapper_s8", convolve_wrapper_s8_buffer_size(p), "arm_convolve_s8"
        own = {"conv_params": _struct(f"{scope}.params", "cmsis_nn_conv_params", **window)}
    else:
        form = depthwise_conv_wrapper_s8_form(p)
        fn, scratch, generic = "arm_depthwise_conv_wrapper_s8", depthwise_conv_wrapper_s8_buffer_size(p), \
            "arm_depthwise_conv_s8"
        own = {"dw_conv_params": _struct(f"{scope}.params", "cmsis_nn_dw_conv_params", ch_mult=p["ch_mult"], **window)}
    note = f"the form {fn} picks"
    if why := _inexact(form, p):  # the general function, called as the wrapper calls it
        fn, note, scratch = generic, f"not the wrapper's form: {why}", 0
        if op == "convolve_s8":
            scratch, own["upscale_dims"] = convolve_s8_buffer_size(p["filter_dims"], p["input_dims"][3]), None
    else:  # the form itself, as an ahead-of-time compiler calls it: the shapes are known here
        fn = form
        if form == "arm_convolve_s8":
            own["upscale_dims"] = None
    call = _call(fn, scratch, ctx=_context(f"{scope}.ctx", scratch),
                 quant_params=_per_channel(scope, p["multipliers"], p["shifts"], cout),
                 input_dims=_dims(f"{scope}.input_dims", p["input_dims"]), input_data=x.slice,
                 filter_dims=_dims(f"{scope}.filter_dims", p["filter_dims"]), filter_data=w.slice,
                 bias_dims=_dims(f"{scope}.bias_dims", (1, 1, 1, cout)), bias_data=bias.slice if bias else None,
                 output_dims=_dims(f"{scope}.output_dims", p["output_dims"]), output_data=out.slice, **own)
    return dataclasses.replace(call, note=note)


def _fc(scope: str, p: dict, x: Operand, w: Operand, bias: Operand | None, out: Operand) -> LibCall:
    batch, n_in, n_out = p["batch"], p["in_features"], p["out_features"]
    fn = f"arm_{p['op']}"  # arm_fully_connected_s8, or _s4 with the filter packed
    _check(x, "s8", (batch, n_in), "input", scope)
    _filter(w, p, (n_out, n_in), scope)
    _check(out, "s8", (batch, n_out), "output", scope)
    if bias is not None:
        _check(bias, "s32", (n_out,), "bias", scope)
    if len(p["multipliers"]) != 1:
        raise NotLowerable(f"{scope}: {fn} takes one multiplier per tensor")
    fc = _struct(f"{scope}.params", "cmsis_nn_fc_params", input_offset=p["input_offset"], filter_offset=0,
                 output_offset=p["output_offset"], activation=_activation(p["activation"]))
    quant = _struct(f"{scope}.quant_params", "cmsis_nn_per_tensor_quant_params", multiplier=p["multipliers"][0],
                    shift=p["shifts"][0])
    return _call(fn, ctx=_context(f"{scope}.ctx", 0), fc_params=fc, quant_params=quant,
                 input_dims=_dims(f"{scope}.input_dims", (batch, 1, 1, n_in)), input_data=x.slice,
                 filter_dims=_dims(f"{scope}.filter_dims", (n_in, 1, 1, n_out)), filter_data=w.slice,
                 bias_dims=_dims(f"{scope}.bias_dims", (1, 1, 1, n_out)), bias_data=bias.slice if bias else None,
                 output_dims=_dims(f"{scope}.output_dims", (batch, 1, 1, n_out)), output_data=out.slice)


def transpose_conv_s8_buffer_size(p: dict) -> int:
    """arm_transpose_conv_s8_get_buffer_size (v7.0.0, the shim's): MAX(KH, stride.h) rows of
    ((W_IN - 1) * stride.w + MAX(KW, stride.h)) * C_OUT int32 sums -- v7.0.0 compares the
    filter's width with stride.h, and so does this."""
    sh, sw = p["stride"]
    cout, kh, kw, _ = p["filter_dims"]
    return ((p["input_dims"][2] - 1) * sw + max(kw, sh)) * cout * max(kh, sh) * 4


def _transpose_conv(scope: str, p: dict, x: Operand, w: Operand, bias: Operand | None, out: Operand) -> LibCall:
    """arm_transpose_conv_s8 itself. (arm_transpose_conv_wrapper_s8 takes a reverse-conv path,
    arm_convolve_s8 with upscale_dims, for strides <= 2 and many input channels; the basic
    function gives the same int8 results.)"""
    cout = p["filter_dims"][0]
    _check(x, "s8", p["input_dims"], "input", scope)
    _check(w, "s8", p["filter_dims"], "filter", scope)
    _check(out, "s8", p["output_dims"], "output", scope)
    if bias is not None:
        _check(bias, "s32", (cout,), "bias", scope)
    sh, sw = p["stride"]
    ph, pw = p["padding"]
    params = _struct(f"{scope}.params", "cmsis_nn_transpose_conv_params", input_offset=p["input_offset"],
                     output_offset=p["output_offset"], stride={"w": sw, "h": sh}, padding={"w": pw, "h": ph},
                     padding_offsets={"w": 0, "h": 0}, dilation={"w": 1, "h": 1},
                     activation=_activation(p["activation"]))
    scratch = transpose_conv_s8_buffer_size(p)
    return _call("arm_transpose_conv_s8", scratch, ctx=_context(f"{scope}.ctx", scratch),
                 output_ctx=_context(f"{scope}.output_ctx", 0), transpose_conv_params=params,
                 quant_params=_per_channel(scope, p["multipliers"], p["shifts"], cout),
                 input_dims=_dims(f"{scope}.input_dims", p["input_dims"]), input_data=x.slice,
                 filter_dims=_dims(f"{scope}.filter_dims", p["filter_dims"]), filter_data=w.slice,
                 bias_dims=_dims(f"{scope}.bias_dims", (1, 1, 1, cout)), bias_data=bias.slice if bias else None,
                 output_dims=_dims(f"{scope}.output_dims", p["output_dims"]), output_data=out.slice)


def convolve_s16_buffer_size(p: dict) -> int:
    """arm_convolve_s16_get_buffer_size (v7.0.0 without Helium, the shim's): two int16 columns of
    C_IN x KH x KW."""
    _, kh, kw, _ = p["filter_dims"]
    return 2 * p["input_dims"][3] * kh * kw * 2


def _s16(scope: str, p: dict, x: Operand, w: Operand, bias: Operand | None, out: Operand) -> LibCall:
    """arm_convolve_s16 / arm_depthwise_conv_s16 / arm_fully_connected_s16 (the general functions;
    the wrappers' fast forms give the same values): int16 input and output, int8 filter, the int64
    bias as the block carries it (int32 [n, 2], the same bytes), or a conv's int32 bias (bias_bits 32)."""
    op = p["op"]
    if op == "fully_connected_s16":
        batch, n_in, cout = p["batch"], p["in_features"], p["out_features"]
        in_dims, f_dims, out_dims = (batch, n_in), (cout, n_in), (batch, cout)
    else:
        cout = p["filter_dims"][0] if op == "convolve_s16" else p["filter_dims"][3]
        in_dims, f_dims, out_dims = p["input_dims"], p["filter_dims"], p["output_dims"]
    _check(x, "s16", in_dims, "input", scope)
    _check(w, "s8", f_dims, "filter", scope)
    _check(out, "s16", out_dims, "output", scope)
    int32_bias = p.get("bias_bits") == 32  # int32 sums and bias (arm_convolve_s16's is_int32_bias)
    if int32_bias and op != "convolve_s16":
        raise NotLowerable(f"{scope}: an int32 bias (arm_{op} takes an int64 one)")
    if bias is not None:
        _check(bias, "s32", (cout,) if int32_bias else (cout, 2), "int32 bias" if int32_bias else
               "int64 bias (int32 words)", scope)
    bias_slice = bias.slice if bias else None
    bias_dims = _dims(f"{scope}.bias_dims", (1, 1, 1, cout))
    if op == "fully_connected_s16":
        if len(p["multipliers"]) != 1:
            raise NotLowerable(f"{scope}: arm_fully_connected_s16 takes one multiplier per tensor")
        fc = _struct(f"{scope}.params", "cmsis_nn_fc_params", input_offset=0, filter_offset=0, output_offset=0,
                     activation=_activation(p["activation"]))
        quant = _struct(f"{scope}.quant_params", "cmsis_nn_per_tensor_quant_params",
                        multiplier=p["multipliers"][0], shift=p["shifts"][0])
        return _call("arm_fully_connected_s16", ctx=_context(f"{scope}.ctx", 0), fc_params=fc, quant_params=quant,
                     input_dims=_dims(f"{scope}.input_dims", (batch, 1, 1, n_in)), input_data=x.slice,
                     filter_dims=_dims(f"{scope}.filter_dims", (n_in, 1, 1, cout)), filter_data=w.slice,
                     bias_dims=bias_dims, bias_data=bias_slice,
                     output_dims=_dims(f"{scope}.output_dims", (batch, 1, 1, cout)), output_data=out.slice)
    data = dict(quant_params=_per_channel(scope, p["multipliers"], p["shifts"], cout),
                input_dims=_dims(f"{scope}.input_dims", in_dims), input_data=x.slice,
                filter_dims=_dims(f"{scope}.filter_dims", f_dims), filter_data=w.slice, bias_dims=bias_dims,
                output_dims=_dims(f"{scope}.output_dims", out_dims), output_data=out.slice)
    if op == "convolve_s16":
        scratch = convolve_s16_buffer_size(p)
        # cmsis_nn_bias_data: the bias's address (NULL for none) and whether it is int32
        bias_data = Const(f"{scope}.bias_data", *cmsis_api.struct_const(
            "cmsis_nn_bias_data", data="{slice0}" if bias else None, is_int32_bias=int(int32_bias)),
            slices=(bias_slice,) if bias else ())
        return _call("arm_convolve_s16", scratch, ctx=_context(f"{scope}.ctx", scratch),
                     conv_params=_struct(f"{scope}.params", "cmsis_nn_conv_params", **_window(p, dilated=True)),
                     bias_data=bias_data, **data)
    return _call("arm_depthwise_conv_s16", 0, ctx=_context(f"{scope}.ctx", 0),
                 dw_conv_params=_struct(f"{scope}.params", "cmsis_nn_dw_conv_params", ch_mult=p["ch_mult"],
                                        **_window(p, dilated=True)), bias_data=bias_slice, **data)


_LOWER = {"convolve_s8": _conv, "depthwise_conv_s8": _conv, "fully_connected_s8": _fc,
          "transpose_conv_s8": _transpose_conv, "convolve_s4": _conv_s4, "depthwise_conv_s4": _conv_s4,
          "fully_connected_s4": _fc, "convolve_s16": _s16, "depthwise_conv_s16": _s16, "fully_connected_s16": _s16}


def lower(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    """The CMSIS-NN call for block `scope` with parameters `p` (params.to_dict()) on XLA's
    buffers `args` (input, filter[, bias]) and `out`."""
    if len(args) not in (2, 3):
        raise NotLowerable(f"{scope}: {len(args)} operands (want input, filter and an optional bias)")
    for a in args:
        if _overlap(a, out):
            raise NotLowerable(f"{scope}: the output buffer overlaps an input buffer")
    fn = _LOWER.get(p["op"])
    if fn is None:
        raise NotLowerable(f"{scope}: no CMSIS-NN lowering for {p['op']}")
    return fn(scope, p, args[0], args[1], args[2] if len(args) == 3 else None, out)
