"""Lower the int8 blocks that read activations only (pooling, add, softmax) onto CMSIS-NN.

The weighted layers (conv, depthwise, dense) are specializer/capture/cmsis_calls.py's; these follow the
same rules: one custom call "cmsis_nn.<op>" becomes one call of CMSIS-NN's s8 function with its
exact signature (v7.0.0's, unchanged since v6.0.0), structs as constant globals named after the
block's scope:

  avgpool_s8          arm_avgpool_s8(ctx, pool_params, input_dims, input, filter_dims,
                                     output_dims, output)
  max_pool_s8         arm_max_pool_s8(...same...)
  elementwise_add_s8  arm_elementwise_add_s8(input_1, input_2, input_1_offset, input_1_mult,
                                             input_1_shift, input_2_offset, input_2_mult,
                                             input_2_shift, left_shift, output, out_offset,
                                             out_mult, out_shift, act_min, act_max, block_size)
  softmax_s8          void arm_softmax_s8(input, num_rows, row_size, mult, shift, diff_min, output)

arm_avgpool_s8's scratch (one int32 per channel with the DSP extension, what
arm_avgpool_s8_get_buffer_size returns on Cortex-M4) comes from the memory plan's shared
scratch global. What does not line up with the block's parameters raises NotLowerable.
"""

from __future__ import annotations

from specializer.capture.cmsis_calls import STATUS, NotLowerable, _check, _context, _dims, _i32s, _overlap
from specializer.capture.libcalls import Operand
from specializer.capture.thunks import LibCall

OPS = ("avgpool_s8", "max_pool_s8", "elementwise_add_s8", "softmax_s8")


def avgpool_s8_buffer_size(channels: int) -> int:
    """arm_avgpool_s8_get_buffer_size(output_w, channels) with the DSP extension (the shim's and
    CMSIS-NN's _dsp form): one int32 sum per channel."""
    return 4 * channels


def _args(scope: str, args: list[Operand], out: Operand, n: int) -> None:
    if len(args) != n:
        raise NotLowerable(f"{scope}: {len(args)} operands (want {n})")
    for a in args:
        if _overlap(a, out):
            raise NotLowerable(f"{scope}: the output buffer overlaps an input buffer")


def _pool(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    _args(scope, args, out, 1)
    x = args[0]
    _check(x, "s8", p["input_dims"], "input", scope)
    _check(out, "s8", p["output_dims"], "output", scope)
    (top, _), (left, _) = p["padding"]
    sh, sw = p["stride"]
    lo, hi = p["activation"]
    fh, fw = p["filter"]
    avg = p["op"] == "avgpool_s8"
    scratch = avgpool_s8_buffer_size(p["input_dims"][3]) if avg else 0
    call_args = (_context(f"{scope}.ctx", scratch), _i32s(f"{scope}.params", [sw, sh, left, top, lo, hi]),
                 _dims(f"{scope}.input_dims", p["input_dims"]), x.slice,
                 _dims(f"{scope}.filter_dims", (1, fh, fw, 1)),
                 _dims(f"{scope}.output_dims", p["output_dims"]), out.slice)
    return LibCall("arm_avgpool_s8" if avg else "arm_max_pool_s8", call_args, ret=STATUS, scratch=scratch)


def _add(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    _args(scope, args, out, 2)
    shape = p["shape"]
    for what, a in (("input 1", args[0]), ("input 2", args[1]), ("output", out)):
        _check(a, "s8", shape, what, scope)
    size = 1
    for d in shape:
        size *= d
    lo, hi = p["activation"]
    call_args = (args[0].slice, args[1].slice,
                 p["input_1_offset"], p["input_1_mult"], p["input_1_shift"],
                 p["input_2_offset"], p["input_2_mult"], p["input_2_shift"], p["left_shift"],
                 out.slice, p["out_offset"], p["out_mult"], p["out_shift"], lo, hi, size)
    return LibCall("arm_elementwise_add_s8", call_args, ret=STATUS)


def _softmax(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    _args(scope, args, out, 1)
    x = args[0]
    rows, row = p["num_rows"], p["row_size"]
    if not x.dims or x.dims[-1] != row or rows * row != _count(x):
        raise NotLowerable(f"{scope}: input is {x}, the block's parameters say {rows} rows of {row}")
    _check(x, "s8", x.dims, "input", scope)
    _check(out, "s8", x.dims, "output", scope)
    call_args = (x.slice, rows, row, p["mult"], p["shift"], p["diff_min"], out.slice)
    return LibCall("arm_softmax_s8", call_args, ret="void")


def _count(op: Operand) -> int:
    n = 1
    for d in op.dims:
        n *= d
    return n


_LOWER = {"avgpool_s8": _pool, "max_pool_s8": _pool, "elementwise_add_s8": _add, "softmax_s8": _softmax}


def lower(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    """The CMSIS-NN call for block `scope` with parameters `p` (params.to_dict()) on XLA's
    buffers `args` (its activation inputs) and `out`."""
    fn = _LOWER.get(p["op"])
    if fn is None:
        raise NotLowerable(f"{scope}: no CMSIS-NN lowering for {p['op']}")
    return fn(scope, p, args, out)
