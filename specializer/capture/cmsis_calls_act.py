"""Lower the int8 blocks that read activations only (pooling, add, softmax) onto CMSIS-NN.

The weighted layers (conv, depthwise, dense) are specializer/capture/cmsis_calls.py's; these follow the
same rules: one custom call "cmsis_nn.<op>" becomes one call of CMSIS-NN's s8 function with its
exact signature (v7.0.0's, unchanged since v6.0.0; specializer/library/cmsis_api.py), arguments
and struct fields given by name, structs as constant globals named after the block's scope:
avgpool_s8 -> arm_avgpool_s8, max_pool_s8 -> arm_max_pool_s8, elementwise_add_s8 ->
arm_elementwise_add_s8, elementwise_mul_s8 -> arm_elementwise_mul_s8, softmax_s8 -> arm_softmax_s8 (an int16
output: softmax_s8_s16 -> arm_softmax_s8_s16);
int16 blocks (the 16x8 scheme) avgpool_s16, max_pool_s16, elementwise_add_s16 and
elementwise_mul_s16 -> CMSIS-NN's function of that name, softmax_s16 -> arm_softmax_s16 with
TFLite's two tables (specializer/quant/lut_s16.py) as constant globals every softmax_s16 call of
the model shares; logistic_s16 and tanh_s16 -> arm_nn_activation_s16 (where the block's input
multiplier is 3 x a power of two: its form).

arm_avgpool_s8's scratch (one int32 per channel with the DSP extension, what
arm_avgpool_s8_get_buffer_size returns on Cortex-M4) comes from the memory plan's shared
scratch global. What does not line up with the block's parameters raises NotLowerable.
"""

from __future__ import annotations

from specializer.capture.cmsis_calls import (
    NotLowerable,
    _activation,
    _array,
    _call,
    _check,
    _context,
    _dims,
    _overlap,
    _struct,
)
from specializer.capture.libcalls import Operand
from specializer.capture.thunks import Const, LibCall
from specializer.library import cmsis_api
from specializer.quant import lut_s16
from specializer.quant.params import cmsis_left_shift

OPS = ("avgpool_s8", "max_pool_s8", "elementwise_add_s8", "elementwise_mul_s8", "softmax_s8", "softmax_s8_s16",
       "avgpool_s16", "max_pool_s16", "elementwise_add_s16", "elementwise_mul_s16", "softmax_s16", "logistic_s16",
       "tanh_s16")


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
    """arm_avgpool_s8 / arm_max_pool_s8, or their s16 forms (the same buffer size: one int32 sum
    per channel)."""
    _args(scope, args, out, 1)
    x = args[0]
    t = p["op"].rsplit("_", 1)[1]  # s8 or s16
    _check(x, t, p["input_dims"], "input", scope)
    _check(out, t, p["output_dims"], "output", scope)
    (top, _), (left, _) = p["padding"]
    sh, sw = p["stride"]
    fh, fw = p["filter"]
    avg = p["op"].startswith("avgpool")
    scratch = avgpool_s8_buffer_size(p["input_dims"][3]) if avg else 0
    pool = _struct(f"{scope}.params", "cmsis_nn_pool_params", stride={"w": sw, "h": sh},
                   padding={"w": left, "h": top}, activation=_activation(p["activation"]))
    # v7.0.0 names arm_max_pool_s16's data parameters src and dst
    data = {"src": x.slice, "dst": out.slice} if p["op"] == "max_pool_s16" else \
        {"input_data": x.slice, "output_data": out.slice}
    return _call(f"arm_{p['op']}", scratch, ctx=_context(f"{scope}.ctx", scratch),
                 pool_params=pool, input_dims=_dims(f"{scope}.input_dims", p["input_dims"]),
                 filter_dims=_dims(f"{scope}.filter_dims", (1, fh, fw, 1)),
                 output_dims=_dims(f"{scope}.output_dims", p["output_dims"]), **data)


def _elementwise(scope: str, p: dict, args: list[Operand], out: Operand) -> None:
    """Two inputs and the output of the block's shape and its width (s8 or s16, from its op)."""
    _args(scope, args, out, 2)
    t = p["op"].rsplit("_", 1)[1]
    for what, a in (("input 1", args[0]), ("input 2", args[1]), ("output", out)):
        _check(a, t, p["shape"], what, scope)


def _add(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    """arm_elementwise_add_s8, or _s16 (the same arguments)."""
    _elementwise(scope, p, args, out)
    size = 1
    for d in p["shape"]:
        size *= d
    lo, hi = p["activation"]
    same = ("input_1_offset", "input_1_mult", "input_1_shift", "input_2_offset", "input_2_mult", "input_2_shift",
            "left_shift", "out_offset", "out_mult", "out_shift")  # the block names these as CMSIS-NN does
    return _call(f"arm_{p['op']}", input_1_vect=args[0].slice, input_2_vect=args[1].slice,
                 output=out.slice, out_activation_min=lo, out_activation_max=hi, block_size=size,
                 **{k: p[k] for k in same})


def _mul(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    """arm_elementwise_mul_s8, or _s16 (the same arguments; its offsets are 0)."""
    _elementwise(scope, p, args, out)
    lo, hi = p["activation"]
    return _call(f"arm_{p['op']}", input_1_vect=args[0].slice, input_2_vect=args[1].slice,
                 input_1_offset=p["input_1_offset"], input_2_offset=p["input_2_offset"], output=out.slice,
                 out_offset=p["out_offset"], out_mult=p["out_mult"], out_shift=p["out_shift"],
                 out_activation_min=lo, out_activation_max=hi, block_size=_count(out))


def _rows(scope: str, p: dict, args: list[Operand], out: Operand, t_in: str, t_out: str) -> dict:
    """A softmax's input and output, num_rows rows of row_size of types t_in and t_out: the call's
    arguments they make."""
    _args(scope, args, out, 1)
    x = args[0]
    rows, row = p["num_rows"], p["row_size"]
    if not x.dims or x.dims[-1] != row or rows * row != _count(x):
        raise NotLowerable(f"{scope}: input is {x}, the block's parameters say {rows} rows of {row}")
    _check(x, t_in, x.dims, "input", scope)
    _check(out, t_out, x.dims, "output", scope)
    return dict(input=x.slice, num_rows=rows, row_size=row, mult=p["mult"], shift=p["shift"], output=out.slice)


def _softmax(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    """arm_softmax_s8, or arm_softmax_s8_s16 (an int16 output)."""
    t_out = "s16" if p["op"] == "softmax_s8_s16" else "s8"
    return _call(f"arm_{p['op']}", diff_min=p["diff_min"], **_rows(scope, p, args, out, "s8", t_out))


def _softmax_s16(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    """arm_softmax_s16 with TFLite's two tables, one copy of each per model (equal names)."""
    tables = tuple(_array(f"cmsis_nn.softmax_s16.{name}", "i16", t) for name, t in
                   (("exp_lut", lut_s16.exp_table()), ("one_by_one_lut", lut_s16.one_over_one_plus_x_table())))
    t, init = cmsis_api.struct_const("cmsis_nn_softmax_lut_s16", exp_lut=f'@"{tables[0].name}"',
                                     one_by_one_lut=f'@"{tables[1].name}"')
    return _call("arm_softmax_s16", softmax_params=Const(f"{scope}.luts", t, init, tables),
                 **_rows(scope, p, args, out, "s16", "s16"))


def _activation_s16(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    _args(scope, args, out, 1)
    _check(args[0], "s16", p["shape"], "input", scope)
    _check(out, "s16", p["shape"], "output", scope)
    left_shift = cmsis_left_shift(p["input_multiplier"], p["input_left_shift"])
    if left_shift is None:
        raise NotLowerable(f"{scope}: input multiplier {p['input_multiplier']} is not 3 x a power of two")
    return _call("arm_nn_activation_s16", input=args[0].slice, output=out.slice, size=_count(out),
                 left_shift=left_shift, type=cmsis_api.SIGMOID if p["op"] == "logistic_s16" else cmsis_api.TANH)


def _count(op: Operand) -> int:
    n = 1
    for d in op.dims:
        n *= d
    return n


_LOWER = {"avgpool_s8": _pool, "max_pool_s8": _pool, "elementwise_add_s8": _add, "elementwise_mul_s8": _mul,
          "softmax_s8": _softmax, "avgpool_s16": _pool, "max_pool_s16": _pool, "elementwise_add_s16": _add,
          "elementwise_mul_s16": _mul, "softmax_s16": _softmax_s16, "logistic_s16": _activation_s16,
          "tanh_s16": _activation_s16, "softmax_s8_s16": _softmax}


def lower(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    """The CMSIS-NN call for block `scope` with parameters `p` (params.to_dict()) on XLA's
    buffers `args` (its activation inputs) and `out`."""
    fn = _LOWER.get(p["op"])
    if fn is None:
        raise NotLowerable(f"{scope}: no CMSIS-NN lowering for {p['op']}")
    return fn(scope, p, args, out)
