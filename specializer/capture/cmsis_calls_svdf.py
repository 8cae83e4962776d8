"""Lower the int8 SVDF block onto CMSIS-NN's arm_svdf_state_s16_s8, or with an int8 state and int8
time weights onto arm_svdf_s8 (v7.0.0's signatures, the shim's).

The block's custom call has two results, the int8 output and the new state, the state result
aliased to the state operand (specializer/quant/calls.py call_with_state): XLA hands both the
same buffer, holding the old state, and the call updates it in place as CMSIS-NN does. Its two
int32 buffers (each filter's time sum, each unit's sum) are the memory plan's shared scratch:
input_ctx at its start, output_ctx after it. Dims as TFLite Micro fills them (n and h; w and c
1). arm_svdf_s8's own ctx (kernel sums) is read only by Helium builds: its buf is NULL. The new
values' clamp (input_activation) is the state type's range, TFLite Micro's reference clamp (its
CMSIS-NN glue passes the int16 range for both, which would let an int8 state wrap). What does not
line up with the block's parameters raises NotLowerable.
"""

from __future__ import annotations

from specializer.capture.cmsis_calls import NotLowerable, _call, _check, _context, _dims, _overlap, _struct
from specializer.capture.libcalls import Operand
from specializer.capture.thunks import Const, LibCall
from specializer.library import cmsis_api

OPS = ("svdf_s8", "svdf_state8_s8")
# op -> (CMSIS-NN function, the state's and the time weights' type)
_FORMS = {"svdf_s8": ("arm_svdf_state_s16_s8", "s16"), "svdf_state8_s8": ("arm_svdf_s8", "s8")}


def svdf_buffer_sizes(p: dict) -> tuple[int, int]:
    """Bytes of (input_ctx, output_ctx): one int32 per filter and per unit, for each batch."""
    return 4 * p["batch"] * p["filters"], 4 * p["batch"] * (p["filters"] // p["rank"])


def _context_at(name: str, offset: int, size: int) -> Const:
    """A cmsis_nn_context whose buf is `offset` bytes into the shared scratch."""
    buf = "{scratch}" if offset == 0 else f"getelementptr (i8, ptr {{scratch}}, i32 {offset})"
    return Const(name, *cmsis_api.struct_const("cmsis_nn_context", buf=buf, size=size))


def lower(scope: str, p: dict, args: list[Operand], outs: list[Operand]) -> LibCall:
    """arm_svdf_state_s16_s8 or arm_svdf_s8 on XLA's buffers: args (input, feature weights, time
    weights, state[, bias]) and outs (output, new state)."""
    if len(args) not in (4, 5) or len(outs) != 2:
        raise NotLowerable(f"{scope}: {len(args)} operands and {len(outs)} results (want input, feature and time "
                           "weights, state, an optional bias; output and state)")
    x, wf, wt, state = args[:4]
    bias = args[4] if len(args) == 5 else None
    out, new_state = outs
    batch, filters, memory, rank = p["batch"], p["filters"], p["memory"], p["rank"]
    units = filters // rank
    fn, st = _FORMS[p["op"]]
    bits = int(st[1:])
    _check(x, "s8", (batch, p["input_size"]), "input", scope)
    _check(wf, "s8", (filters, p["input_size"]), "feature weights", scope)
    _check(wt, st, (filters, memory), "time weights", scope)
    _check(state, st, (batch, filters * memory), "state", scope)
    _check(new_state, st, (batch, filters * memory), "new state", scope)
    _check(out, "s8", (batch, units), "output", scope)
    if bias is not None:
        _check(bias, "s32", (units,), "bias", scope)
    if new_state.slice != state.slice:
        raise NotLowerable(f"{scope}: XLA gave the new state another buffer than the old one's "
                           "(the call updates its state in place)")
    for a in args:
        if _overlap(a, out):
            raise NotLowerable(f"{scope}: the output buffer overlaps an input buffer")
    in_size, out_size = svdf_buffer_sizes(p)
    params = _struct(f"{scope}.params", "cmsis_nn_svdf_params", rank=rank, input_offset=p["input_zero_point"],
                     output_offset=p["output_zero_point"],
                     input_activation={"min": -(1 << (bits - 1)), "max": (1 << (bits - 1)) - 1},
                     output_activation={"min": -128, "max": 127})
    own = {"ctx": _context(f"{scope}.ctx", 0)} if fn == "arm_svdf_s8" else {}
    return _call(fn, in_size + out_size, **own,
                 input_ctx=_context_at(f"{scope}.input_ctx", 0, in_size),
                 output_ctx=_context_at(f"{scope}.output_ctx", in_size, out_size), svdf_params=params,
                 input_quant_params=_struct(f"{scope}.input_quant_params", "cmsis_nn_per_tensor_quant_params",
                                            multiplier=p["feature_multiplier"], shift=p["feature_shift"]),
                 output_quant_params=_struct(f"{scope}.output_quant_params", "cmsis_nn_per_tensor_quant_params",
                                             multiplier=p["output_multiplier"], shift=p["output_shift"]),
                 input_dims=_dims(f"{scope}.input_dims", (batch, p["input_size"], 1, 1)), input_data=x.slice,
                 state_dims=_dims(f"{scope}.state_dims", (batch, filters * memory, 1, 1)),
                 state_data=new_state.slice,
                 weights_feature_dims=_dims(f"{scope}.weights_feature_dims", (filters, p["input_size"], 1, 1)),
                 weights_feature_data=wf.slice,
                 weights_time_dims=_dims(f"{scope}.weights_time_dims", (filters, memory, 1, 1)),
                 weights_time_data=wt.slice, bias_dims=_dims(f"{scope}.bias_dims", (units, 1, 1, 1)),
                 bias_data=bias.slice if bias is not None else None,
                 output_dims=_dims(f"{scope}.output_dims", (batch, units, 1, 1)), output_data=out.slice)
