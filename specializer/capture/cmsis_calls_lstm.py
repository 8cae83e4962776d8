"""Lower the int8 LSTM block (specializer.quant.lstm) onto CMSIS-NN's arm_lstm_unidirectional_s8
(v7.0.0's signature, the shim's).

The block's custom call takes the input, the four gates' input and recurrent weights (forget,
input, cell, output) and their effective biases (the zero points folded in by the block); the
call gets them through one constant cmsis_nn_lstm_params whose gate structs point at those XLA
buffers, as TFLite Micro's CMSIS-NN port fills it. Its three int16 buffers (two gate buffers and
the cell state, which the function clears itself) are the shared scratch, one after another.
cell_clip is the block's quantized clip, 0 where the file sets none (CMSIS-NN v7.0.0 reads a clip
<= 0 as none, as TFLite Micro's port passes it). What does not line up with the block's
parameters raises NotLowerable.
"""

from __future__ import annotations

from specializer.capture.cmsis_calls import NotLowerable, _call, _check, _overlap
from specializer.capture.libcalls import Operand
from specializer.capture.thunks import Const, LibCall
from specializer.library import cmsis_api
from specializer.library.cmsis_api import SIGMOID, TANH

OPS = ("lstm_s8",)
GATES = ("forget_gate", "input_gate", "cell_gate", "output_gate")


def lstm_buffer_size(p: dict) -> int:
    """Bytes of one of the three int16 buffers: one value per batch and cell."""
    return 2 * p["batch"] * p["cells"]


def lower(scope: str, p: dict, args: list[Operand], out: Operand) -> LibCall:
    """arm_lstm_unidirectional_s8 on XLA's buffers: args (input, 4 input weights, 4 recurrent
    weights, 4 input effective biases, 4 recurrent effective biases) and out."""
    if len(args) != 17:
        raise NotLowerable(f"{scope}: {len(args)} operands (want the input, 8 weights and 8 effective biases)")
    batch, time, n_in, cells = p["batch"], p["time"], p["input_size"], p["cells"]
    x, wx, wh, bx, bh = args[0], args[1:5], args[5:9], args[9:13], args[13:17]
    shape = (time, batch, n_in) if p["time_major"] else (batch, time, n_in)
    _check(x, "s8", shape, "input", scope)
    _check(out, "s8", shape[:2] + (cells,), "output", scope)
    for k in range(4):
        _check(wx[k], "s8", (cells, n_in), f"{GATES[k]} input weights", scope)
        _check(wh[k], "s8", (cells, cells), f"{GATES[k]} recurrent weights", scope)
        _check(bx[k], "s32", (cells,), f"{GATES[k]} input bias", scope)
        _check(bh[k], "s32", (cells,), f"{GATES[k]} recurrent bias", scope)
    for a in args:
        if _overlap(a, out):
            raise NotLowerable(f"{scope}: the output buffer overlaps an input buffer")
    slices = tuple(a.slice for a in args[1:])
    gates = {}
    for k, g in enumerate(GATES):
        m1, s1, m2, s2 = p["gates"][k]
        gates[g] = {"input_multiplier": m1, "input_shift": s1, "input_weights": f"{{slice{k}}}",
                    "input_effective_bias": f"{{slice{8 + k}}}", "hidden_multiplier": m2, "hidden_shift": s2,
                    "hidden_weights": f"{{slice{4 + k}}}", "hidden_effective_bias": f"{{slice{12 + k}}}",
                    "bias": None, "activation_type": TANH if g == "cell_gate" else SIGMOID}
    (fm, fs), (im, ins), (om, os) = p["forget_mul"], p["input_mul"], p["output_mul"]
    params = Const(f"{scope}.params", *cmsis_api.struct_const(
        "cmsis_nn_lstm_params", time_major=int(p["time_major"]), batch_size=batch, time_steps=time, input_size=n_in,
        hidden_size=cells, input_offset=-p["input_zero_point"], forget_to_cell_multiplier=fm,
        forget_to_cell_shift=fs, input_to_cell_multiplier=im, input_to_cell_shift=ins,
        cell_clip=p["cell_clip"], cell_scale_power=p["cell_scale_power"], output_multiplier=om,
        output_shift=os, output_offset=p["hidden_zero_point"], **gates), slices=slices)
    size = lstm_buffer_size(p)
    buffers = Const(f"{scope}.buffers", *cmsis_api.struct_const(
        "cmsis_nn_lstm_context", temp1="{scratch}", temp2=f"getelementptr (i8, ptr {{scratch}}, i32 {size})",
        cell_state=f"getelementptr (i8, ptr {{scratch}}, i32 {2 * size})"))
    return _call("arm_lstm_unidirectional_s8", 3 * size, input=x.slice, output=out.slice, params=params,
                 buffers=buffers)
