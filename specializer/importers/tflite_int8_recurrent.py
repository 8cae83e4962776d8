"""TFLite's int8 recurrent ops as specializer.quant's blocks, their parameters derived from the
file as TFLite Micro's Prepare derives them:
- SVDF (svdf_common.cc PrepareSvdf), its time weights and state int16 or int8: the feature
  step's multiplier from input scale * feature-weight scale / state scale and the output's from
  state scale * time-weight scale / output scale, each product and quotient taken in float32 (as
  TFLite Micro's float fields), then QuantizeMultiplier;
- UNIDIRECTIONAL_SEQUENCE_LSTM (lstm_eval_common.cc PrepareGateParametersInteger): each gate's
  input and recurrent products into int16 at 2**-12, their multipliers as a fully connected
  layer's (the scales' product in float32, divided in double); the products between gates from
  2**-15 and the cell and hidden scales in double; the cell scale a power of two.

A model is one call: each recurrent layer starts from its states as TFLite Micro's reset leaves
them (an int8 state at its zero point, an int16 one at 0), and the states it leaves are not kept
for a next call.
"""

from __future__ import annotations

import numpy as np

from specializer.importers.tflite_file import ACTIVATION_NAMES, TensorRecord
from specializer.importers.tflite_int8 import _io, per_tensor, tflite_multiplier
from specializer.importers.tflite_layer import Layer, OpContext
from specializer.quant import blocks
from specializer.quant import lstm as lstm_block
from specializer.quant.params import LstmParams, SvdfParams


def _f32(a: float, b: float, c: float) -> float:
    """a * b / c in float32, TFLite Micro's arithmetic for an effective scale."""
    return float(np.float32(np.float32(a) * np.float32(b)) / np.float32(c))


def _constant(c: OpContext, k: int, what: str, dtype: str, rank: int, why: str = "") -> TensorRecord:
    t = c.tensor(k)
    if t is None:
        raise c.refuse(f"has no {what} (input {k})")
    if t.type != dtype:
        raise c.refuse(f"{what} (tensor {t.index}) is {t.type}; the reader takes {dtype}{why}")
    if len(t.shape) != rank:
        raise c.refuse(f"{what} (tensor {t.index}) is {len(t.shape)}-D {list(t.shape)}, not {rank}-D")
    return t


def svdf(c: OpContext, x: TensorRecord) -> Layer:
    in_s, in_zp, out_s, out_zp = _io(c, x)
    if len(x.shape) != 2:
        raise c.refuse(f"input {list(x.shape)} is not [batch, input size]")
    batch, n_in = x.shape
    wf = _constant(c, 1, "feature weights", "INT8", 2)
    wt = c.tensor(2)
    kind = wt.type if wt is not None and wt.type in ("INT16", "INT8") else "INT16"
    wt = _constant(c, 2, "time weights", kind, 2, " or INT8")
    filters, memory = wt.shape
    rank = int(c.options["rank"])
    if wf.shape != (filters, n_in) or rank < 1 or filters % rank:
        raise c.refuse(f"feature weights {list(wf.shape)}, time weights {list(wt.shape)} and rank {rank} do not "
                       f"fit input {list(x.shape)} (want [filters, {n_in}], [filters, memory], filters a "
                       "multiple of the rank)")
    units = filters // rank
    if c.out.shape != (batch, units):
        raise c.refuse(f"output {list(c.out.shape)} is not [batch, filters / rank] = {[batch, units]}")
    state = _constant(c, 4, "state", kind, 2, f" (TFLite Micro reads the state as the time weights' {kind})")
    if state.shape != (batch, filters * memory):
        raise c.refuse(f"state {list(state.shape)} is not [batch, filters * memory] = {[batch, filters * memory]}")
    if state.data is not None and state.data.any():
        raise c.refuse(f"state (tensor {state.index}) has initial values; TFLite Micro starts it at zero")
    state_s, state_zp = per_tensor(c, state, "state")
    if state_zp != 0:
        why = ("an int16 state's is 0" if kind == "INT16" else
               "CMSIS-NN's arm_svdf_s8 takes an int8 state's as 0 (it has no state offset)")
        raise c.refuse(f"state (tensor {state.index}) has zero point {state_zp}; {why}")
    wf_s, _ = per_tensor(c, wf, "feature weights")
    wt_s, _ = per_tensor(c, wt, "time weights")
    names = [c.constant(1, "w", "INT8"), c.constant(2, "t", kind)]
    names.append(f"s{c.op.index}")
    c.weights[names[-1]] = np.zeros(state.shape, np.int16 if kind == "INT16" else np.int8)
    if c.tensor(3) is not None:
        names.append(c.constant(3, "b", "INT32"))
        if c.tensor(3).shape != (units,):
            raise c.refuse(f"bias {list(c.tensor(3).shape)} is not [filters / rank] = [{units}]")
    m1, s1 = tflite_multiplier(_f32(in_s, wf_s, state_s))
    m2, s2 = tflite_multiplier(_f32(state_s, wt_s, out_s))
    p = SvdfParams(batch=batch, input_size=n_in, filters=filters, memory=memory, rank=rank, input_zero_point=in_zp,
                   output_zero_point=out_zp, feature_multiplier=m1, feature_shift=s1, output_multiplier=m2,
                   output_shift=s2, state_bits=16 if kind == "INT16" else 8)
    return c.layer(x, tuple(names), p, lambda a, w, t, s, b=None: blocks.svdf(a, w, t, b, s, p)[0])


from specializer.quant.lstm import CELL_POWERS, GATE_OUT_SCALE, GATE_SCALE  # noqa: E402
# TFLite's inputs: input-to-{input, forget, cell, output} weights 1-4, recurrent 5-8, peepholes
# 9-11, gate biases 12-15, projection 16-17, hidden and cell state 18-19, layer norms 20-23;
# the block's gate order is forget, input, cell, output
_GATES = (1, 0, 2, 3)
_ABSENT = {9: "peephole", 10: "peephole", 11: "peephole", 16: "projection", 17: "projection",
           20: "layer norm", 21: "layer norm", 22: "layer norm", 23: "layer norm"}


def _fc_multiplier(in_s: float, w_s: float) -> tuple[int, int]:
    return tflite_multiplier(float(np.float32(in_s) * np.float32(w_s)) / GATE_SCALE)


def _mul_multiplier(a: float, b: float, out: float) -> tuple[int, int]:
    return tflite_multiplier(float(a) * float(b) / float(out))


def lstm(c: OpContext, x: TensorRecord) -> Layer:
    in_s, in_zp, out_s, out_zp = _io(c, x)
    if len(c.op.inputs) != 24:
        raise c.refuse(f"{len(c.op.inputs)} inputs (TFLite's fully integer LSTM has 24)")
    for k, what in _ABSENT.items():
        if c.tensor(k) is not None:
            raise c.refuse(f"has {what} weights (input {k}); TFLite Micro's LSTM takes none")
    if c.options["diagonalRecurrentTensors"]:
        raise c.refuse("diagonal recurrent weights (version 4) are not supported")
    time_major = bool(c.options["timeMajor"])
    act = ACTIVATION_NAMES.get(c.options["fusedActivationFunction"])
    if act != "TANH":
        raise c.refuse(f"cell activation {act} (TFLite Micro's integer LSTM takes TANH)")
    if len(x.shape) != 3:
        raise c.refuse(f"input {list(x.shape)} is not 3-D")
    time, batch, n_in = x.shape if time_major else (x.shape[1], x.shape[0], x.shape[2])
    hidden, cell = _constant(c, 18, "hidden state", "INT8", 2), _constant(c, 19, "cell state", "INT16", 2)
    cells = hidden.shape[1]
    if hidden.shape != (batch, cells) or cell.shape != (batch, cells):
        raise c.refuse(f"states {list(hidden.shape)} and {list(cell.shape)} are not [batch, cells] = "
                       f"[{batch}, cells]")
    for t in (hidden, cell):
        if t.data is not None and t.data.any():
            raise c.refuse(f"{t.name} (tensor {t.index}) has initial values; TFLite Micro starts it at zero")
    h_s, h_zp = per_tensor(c, hidden, "hidden state")
    cell_s, cell_zp = per_tensor(c, cell, "cell state")
    power = int(np.round(np.log2(cell_s)))
    if cell_zp != 0 or cell_s != 2.0 ** power:
        raise c.refuse(f"cell state scale {cell_s} / zero point {cell_zp}: TFLite Micro takes a power of two and 0")
    if not CELL_POWERS[0] <= power <= CELL_POWERS[1]:  # the int16 tanh's input shift stays in an int32
        raise c.refuse(f"cell state scale 2**{power} is outside 2**{CELL_POWERS[0]}..2**{CELL_POWERS[1]}")
    if c.out.shape != x.shape[:2] + (cells,):
        raise c.refuse(f"output {list(c.out.shape)} is not {list(x.shape[:2] + (cells,))}")
    names, gates = [], []
    for k in range(4):
        _constant(c, 1 + _GATES[k], "input weights", "INT8", 2)
        names.append(c.constant(1 + _GATES[k], f"wx{k}_", "INT8"))
    for k in range(4):
        _constant(c, 5 + _GATES[k], "recurrent weights", "INT8", 2)
        names.append(c.constant(5 + _GATES[k], f"wh{k}_", "INT8"))
    for k in range(4):
        _constant(c, 12 + _GATES[k], "gate bias", "INT32", 1)
        names.append(c.constant(12 + _GATES[k], f"bg{k}_", "INT32"))
    for k in range(4):
        wx, wh, b = c.tensor(1 + _GATES[k]), c.tensor(5 + _GATES[k]), c.tensor(12 + _GATES[k])
        if wx.shape != (cells, n_in) or wh.shape != (cells, cells) or b.shape != (cells,):
            raise c.refuse(f"gate weights {list(wx.shape)}, {list(wh.shape)} and bias {list(b.shape)} do not fit "
                           f"{n_in} inputs and {cells} cells")
        gates.append(_fc_multiplier(in_s, per_tensor(c, wx, "input weights")[0])
                     + _fc_multiplier(h_s, per_tensor(c, wh, "recurrent weights")[0]))
    clip = float(c.options["cellClip"])
    quantized_clip = int(min(max(float(clip) / float(cell_s), -32768.0), 32767.0)) if clip > 0 else 0
    if clip > 0 and quantized_clip == 0:  # TFLite Micro would hold the cell at 0
        raise c.refuse(f"cell clip {clip:g} is below the cell state's scale {cell_s:g}")
    p = LstmParams(batch=batch, time=time, input_size=n_in, cells=cells, time_major=time_major,
                   input_zero_point=in_zp, hidden_zero_point=h_zp, gates=tuple(gates),
                   forget_mul=_mul_multiplier(GATE_OUT_SCALE, cell_s, cell_s),
                   input_mul=_mul_multiplier(GATE_OUT_SCALE, GATE_OUT_SCALE, cell_s),
                   output_mul=_mul_multiplier(GATE_OUT_SCALE, GATE_OUT_SCALE, h_s), cell_scale_power=power,
                   cell_clip=quantized_clip)

    def run(a, *w):  # the block starts the states as TFLite Micro's reset leaves them
        return lstm_block.lstm(a, w[0:4], w[4:8], w[8:12], p)
    return c.layer(x, tuple(names), p, run)


OPS = {"SVDF": svdf, "UNIDIRECTIONAL_SEQUENCE_LSTM": lstm}
