"""Lower the int8 blocks capture sees as custom calls (specializer/quant/calls.py) onto CMSIS-NN.

One custom call "cmsis_nn.<op>" becomes one call of CMSIS-NN's s8 function with CMSIS-NN
v7.0.0's signature (the shim's; specializer/library/cmsis_api.py lists it and checks a checkout against
it), every struct and per-channel array a constant global named after the block's scope:

  convolve_s8          arm_convolve_s8(ctx, conv_params, quant_params, input_dims, input,
                                       filter_dims, filter, bias_dims, bias, upscale_dims = NULL,
                                       output_dims, output)
  depthwise_conv_s8    arm_depthwise_conv_s8(ctx, dw_conv_params, quant_params, ...same, no upscale_dims...)
  fully_connected_s8   arm_fully_connected_s8(ctx, fc_params, per_tensor quant_params, ...same...)

The scratch buffer (cmsis_nn_context.buf) is the memory plan's shared scratch global, sized
with v7.0.0's *_get_buffer_size formulas for a DSP core without Helium, computed here (the
shim's functions return the same). Anything that does not line up with the block's parameters (dtypes,
shapes, layouts, an output sharing memory with an input) raises NotLowerable: capture then
captures again with every block left to XLA and logs why.
"""

from __future__ import annotations

from specializer.capture.libcalls import Operand
from specializer.capture.thunks import Const, LibCall

STATUS = "i32"  # arm_cmsis_nn_status


class NotLowerable(Exception):
    """A block's custom call that cannot become its CMSIS-NN call exactly."""


def _dims(name: str, d) -> Const:
    n, h, w, c = d
    return Const(name, "[4 x i32]", f"[i32 {n}, i32 {h}, i32 {w}, i32 {c}]")


def _i32s(name: str, values) -> Const:
    return Const(name, f"[{len(values)} x i32]", "[" + ", ".join(f"i32 {int(v)}" for v in values) + "]")


def _context(name: str, size: int) -> Const:
    buf = "ptr {scratch}" if size else "ptr null"
    return Const(name, "{ ptr, i32 }", f"{{ {buf}, i32 {size} }}")


def _per_channel(scope: str, mults, shifts, n: int) -> Const:
    """cmsis_nn_per_channel_quant_params {int32_t *multiplier, int32_t *shift}, expanded to one
    pair per channel (a per-tensor block repeats its pair)."""
    mults = list(mults) * (n // len(mults)) if len(mults) == 1 else list(mults)
    shifts = list(shifts) * (n // len(shifts)) if len(shifts) == 1 else list(shifts)
    m, s = _i32s(f"{scope}.multiplier", mults), _i32s(f"{scope}.shift", shifts)
    return Const(f"{scope}.quant_params", "{ ptr, ptr }", f'{{ ptr @"{m.name}", ptr @"{s.name}" }}', (m, s))


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


def lower(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    """The CMSIS-NN call for block `scope` with parameters `p` (params.to_dict()) on XLA's
    buffers `args` (input, filter[, bias]) and `out`."""
    op = p["op"]
    if len(args) not in (2, 3):
        raise NotLowerable(f"{scope}: {len(args)} operands (want input, filter and an optional bias)")
    for a in args:
        if _overlap(a, out):
            raise NotLowerable(f"{scope}: the output buffer overlaps an input buffer")
    x, w = args[0], args[1]
    bias = args[2] if len(args) == 3 else None
    if op in ("convolve_s8", "depthwise_conv_s8"):
        cout = p["filter_dims"][0] if op == "convolve_s8" else p["filter_dims"][3]
        _check(x, "s8", p["input_dims"], "input", scope)
        _check(w, "s8", p["filter_dims"], "filter", scope)
        _check(out, "s8", p["output_dims"], "output", scope)
        if bias is not None:
            _check(bias, "s32", (cout,), "bias", scope)
        (top, _), (left, _) = p["padding"]
        sh, sw = p["stride"]
        lo, hi = p["activation"]
        quant = _per_channel(scope, p["multipliers"], p["shifts"], cout)
        if op == "convolve_s8":
            fn = "arm_convolve_s8"
            scratch = convolve_s8_buffer_size(p["filter_dims"], p["input_dims"][3])
            fields = [p["input_offset"], p["output_offset"], sw, sh, left, top, 1, 1, lo, hi]
        else:
            fn = "arm_depthwise_conv_s8"
            scratch = 0
            fields = [p["input_offset"], p["output_offset"], p["ch_mult"], sw, sh, left, top, 1, 1, lo, hi]
        conv = _i32s(f"{scope}.params", fields)
        upscale = (None,) if op == "convolve_s8" else ()  # v7.0.0: NULL, no upscaling
        call_args = (_context(f"{scope}.ctx", scratch), conv, quant,
                     _dims(f"{scope}.input_dims", p["input_dims"]), x.slice,
                     _dims(f"{scope}.filter_dims", p["filter_dims"]), w.slice,
                     _dims(f"{scope}.bias_dims", (1, 1, 1, cout)), bias.slice if bias else None,
                     *upscale, _dims(f"{scope}.output_dims", p["output_dims"]), out.slice)
        return LibCall(fn, call_args, ret=STATUS, scratch=scratch)
    if op == "fully_connected_s8":
        batch, n_in, n_out = p["batch"], p["in_features"], p["out_features"]
        _check(x, "s8", (batch, n_in), "input", scope)
        _check(w, "s8", (n_out, n_in), "filter", scope)
        _check(out, "s8", (batch, n_out), "output", scope)
        if bias is not None:
            _check(bias, "s32", (n_out,), "bias", scope)
        if len(p["multipliers"]) != 1:
            raise NotLowerable(f"{scope}: arm_fully_connected_s8 takes one multiplier per tensor")
        lo, hi = p["activation"]
        fc = _i32s(f"{scope}.params", [p["input_offset"], 0, p["output_offset"], lo, hi])
        quant = _i32s(f"{scope}.quant_params", [p["multipliers"][0], p["shifts"][0]])
        call_args = (_context(f"{scope}.ctx", 0), fc, quant,
                     _dims(f"{scope}.input_dims", (batch, 1, 1, n_in)), x.slice,
                     _dims(f"{scope}.filter_dims", (n_in, 1, 1, n_out)), w.slice,
                     _dims(f"{scope}.bias_dims", (1, 1, 1, n_out)), bias.slice if bias else None,
                     _dims(f"{scope}.output_dims", (batch, 1, 1, n_out)), out.slice)
        return LibCall("arm_fully_connected_s8", call_args, ret=STATUS)
    raise NotLowerable(f"{scope}: no CMSIS-NN lowering for {op}")
