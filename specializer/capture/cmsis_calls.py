"""Lower the int8 blocks capture sees as custom calls (specializer/quant/calls.py) onto CMSIS-NN.

One custom call "cmsis_nn.<op>" becomes one call of CMSIS-NN's s8 function with CMSIS-NN
v7.0.0's signature (the shim's), every struct and per-channel array a constant global named
after the block's scope: convolve_s8 -> arm_convolve_s8 (upscale_dims NULL), depthwise_conv_s8
-> arm_depthwise_conv_s8, fully_connected_s8 -> arm_fully_connected_s8. Arguments and struct
fields are given by name; specializer/library/cmsis_api.py's tables put them in C's order.

The scratch buffer (cmsis_nn_context.buf) is the memory plan's shared scratch global, sized
with v7.0.0's *_get_buffer_size formulas for a DSP core without Helium, computed here (the
shim's functions return the same). Anything that does not line up with the block's parameters (dtypes,
shapes, layouts, an output sharing memory with an input) raises NotLowerable: capture then
captures again with every block left to XLA and logs why.
"""

from __future__ import annotations

from specializer.capture.libcalls import Operand
from specializer.capture.thunks import Const, LibCall
from specializer.library import cmsis_api


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


def _i32s(name: str, values) -> Const:
    return Const(name, f"[{len(values)} x i32]", "[" + ", ".join(f"i32 {int(v)}" for v in values) + "]")


def _context(name: str, size: int) -> Const:
    return _struct(name, "cmsis_nn_context", buf="{scratch}" if size else None, size=size)


def _per_channel(scope: str, mults, shifts, n: int) -> Const:
    """cmsis_nn_per_channel_quant_params expanded to one pair per channel (a per-tensor block
    repeats its pair)."""
    mults = list(mults) * (n // len(mults)) if len(mults) == 1 else list(mults)
    shifts = list(shifts) * (n // len(shifts)) if len(shifts) == 1 else list(shifts)
    m, s = _i32s(f"{scope}.multiplier", mults), _i32s(f"{scope}.shift", shifts)
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


def _check(op: Operand, dtype: str, dims, what: str, scope: str) -> None:
    if op.dtype != dtype or tuple(op.dims) != tuple(dims):
        raise NotLowerable(f"{scope}: {what} is {op}, the block's parameters say {dtype}{list(dims)}")
    if tuple(op.minor_to_major) != tuple(reversed(range(len(op.dims)))):
        raise NotLowerable(f"{scope}: {what} {op} is not row-major")


def _overlap(a: Operand, b: Operand) -> bool:
    x, y = a.slice, b.slice
    return x.alloc == y.alloc and x.offset < y.offset + y.size and y.offset < x.offset + x.size


def _conv(scope: str, p: dict, x: Operand, w: Operand, bias: Operand | None, out: Operand) -> LibCall:
    op = p["op"]
    cout = p["filter_dims"][0] if op == "convolve_s8" else p["filter_dims"][3]
    _check(x, "s8", p["input_dims"], "input", scope)
    _check(w, "s8", p["filter_dims"], "filter", scope)
    _check(out, "s8", p["output_dims"], "output", scope)
    if bias is not None:
        _check(bias, "s32", (cout,), "bias", scope)
    (top, _), (left, _) = p["padding"]
    sh, sw = p["stride"]
    window = {"input_offset": p["input_offset"], "output_offset": p["output_offset"],
              "stride": {"w": sw, "h": sh}, "padding": {"w": left, "h": top}, "dilation": {"w": 1, "h": 1},
              "activation": _activation(p["activation"])}
    if op == "convolve_s8":
        fn = "arm_convolve_s8"
        scratch = convolve_s8_buffer_size(p["filter_dims"], p["input_dims"][3])
        # v7.0.0: upscale_dims NULL, no upscaling
        own = {"conv_params": _struct(f"{scope}.params", "cmsis_nn_conv_params", **window), "upscale_dims": None}
    else:
        fn, scratch = "arm_depthwise_conv_s8", 0
        own = {"dw_conv_params": _struct(f"{scope}.params", "cmsis_nn_dw_conv_params", ch_mult=p["ch_mult"], **window)}
    return _call(fn, scratch, ctx=_context(f"{scope}.ctx", scratch),
                 quant_params=_per_channel(scope, p["multipliers"], p["shifts"], cout),
                 input_dims=_dims(f"{scope}.input_dims", p["input_dims"]), input_data=x.slice,
                 filter_dims=_dims(f"{scope}.filter_dims", p["filter_dims"]), filter_data=w.slice,
                 bias_dims=_dims(f"{scope}.bias_dims", (1, 1, 1, cout)), bias_data=bias.slice if bias else None,
                 output_dims=_dims(f"{scope}.output_dims", p["output_dims"]), output_data=out.slice, **own)


def _fc(scope: str, p: dict, x: Operand, w: Operand, bias: Operand | None, out: Operand) -> LibCall:
    batch, n_in, n_out = p["batch"], p["in_features"], p["out_features"]
    _check(x, "s8", (batch, n_in), "input", scope)
    _check(w, "s8", (n_out, n_in), "filter", scope)
    _check(out, "s8", (batch, n_out), "output", scope)
    if bias is not None:
        _check(bias, "s32", (n_out,), "bias", scope)
    if len(p["multipliers"]) != 1:
        raise NotLowerable(f"{scope}: arm_fully_connected_s8 takes one multiplier per tensor")
    fc = _struct(f"{scope}.params", "cmsis_nn_fc_params", input_offset=p["input_offset"], filter_offset=0,
                 output_offset=p["output_offset"], activation=_activation(p["activation"]))
    quant = _struct(f"{scope}.quant_params", "cmsis_nn_per_tensor_quant_params", multiplier=p["multipliers"][0],
                    shift=p["shifts"][0])
    return _call("arm_fully_connected_s8", ctx=_context(f"{scope}.ctx", 0), fc_params=fc, quant_params=quant,
                 input_dims=_dims(f"{scope}.input_dims", (batch, 1, 1, n_in)), input_data=x.slice,
                 filter_dims=_dims(f"{scope}.filter_dims", (n_in, 1, 1, n_out)), filter_data=w.slice,
                 bias_dims=_dims(f"{scope}.bias_dims", (1, 1, 1, n_out)), bias_data=bias.slice if bias else None,
                 output_dims=_dims(f"{scope}.output_dims", (batch, 1, 1, n_out)), output_data=out.slice)


_LOWER = {"convolve_s8": _conv, "depthwise_conv_s8": _conv, "fully_connected_s8": _fc}


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
