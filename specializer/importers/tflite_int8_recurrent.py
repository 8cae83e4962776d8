"""TFLite's int8 recurrent ops as specializer.quant's blocks, their parameters derived from the
file as TFLite Micro's Prepare derives them (svdf_common.cc PrepareSvdf):
- SVDF: the feature step's multiplier from input scale * feature-weight scale / state scale and
  the output's from state scale * time-weight scale / output scale, each product and quotient
  taken in float32 (as TFLite Micro's float fields), then QuantizeMultiplier.

A model is one call: each SVDF starts from its state's initial value (zeros, what TFLite Micro
holds after AllocateTensors or `reset_all_variables`), and the state it leaves is not kept for
a next call.
"""

from __future__ import annotations

import numpy as np

from specializer.importers.tflite_file import TensorRecord
from specializer.importers.tflite_int8 import _io, per_tensor, tflite_multiplier
from specializer.importers.tflite_layer import Layer, OpContext
from specializer.quant import blocks
from specializer.quant.params import SvdfParams


def _f32(a: float, b: float, c: float) -> float:
    """a * b / c in float32, TFLite Micro's arithmetic for an effective scale."""
    return float(np.float32(np.float32(a) * np.float32(b)) / np.float32(c))


def _constant(c: OpContext, k: int, what: str, dtype: str, rank: int) -> TensorRecord:
    t = c.tensor(k)
    if t is None:
        raise c.refuse(f"has no {what} (input {k})")
    if t.type != dtype:
        raise c.refuse(f"{what} (tensor {t.index}) is {t.type}; the reader takes {dtype}"
                       + (" (int8 time weights, arm_svdf_s8, are not supported)" if k == 2 else ""))
    if len(t.shape) != rank:
        raise c.refuse(f"{what} (tensor {t.index}) is {len(t.shape)}-D {list(t.shape)}, not {rank}-D")
    return t


def svdf(c: OpContext, x: TensorRecord) -> Layer:
    in_s, in_zp, out_s, out_zp = _io(c, x)
    if len(x.shape) != 2:
        raise c.refuse(f"input {list(x.shape)} is not [batch, input size]")
    batch, n_in = x.shape
    wf = _constant(c, 1, "feature weights", "INT8", 2)
    wt = _constant(c, 2, "time weights", "INT16", 2)
    filters, memory = wt.shape
    rank = int(c.options["rank"])
    if wf.shape != (filters, n_in) or rank < 1 or filters % rank:
        raise c.refuse(f"feature weights {list(wf.shape)}, time weights {list(wt.shape)} and rank {rank} do not "
                       f"fit input {list(x.shape)} (want [filters, {n_in}], [filters, memory], filters a "
                       "multiple of the rank)")
    units = filters // rank
    if c.out.shape != (batch, units):
        raise c.refuse(f"output {list(c.out.shape)} is not [batch, filters / rank] = {[batch, units]}")
    state = _constant(c, 4, "state", "INT16", 2)
    if state.shape != (batch, filters * memory):
        raise c.refuse(f"state {list(state.shape)} is not [batch, filters * memory] = {[batch, filters * memory]}")
    if state.data is not None and state.data.any():
        raise c.refuse(f"state (tensor {state.index}) has initial values; TFLite Micro starts it at zero")
    state_s, state_zp = per_tensor(c, state, "state")
    if state_zp != 0:
        raise c.refuse(f"state (tensor {state.index}) has zero point {state_zp}; an int16 state's is 0")
    wf_s, _ = per_tensor(c, wf, "feature weights")
    wt_s, _ = per_tensor(c, wt, "time weights")
    names = [c.constant(1, "w", "INT8"), c.constant(2, "t", "INT16")]
    names.append(f"s{c.op.index}")
    c.weights[names[-1]] = np.zeros(state.shape, np.int16)
    if c.tensor(3) is not None:
        names.append(c.constant(3, "b", "INT32"))
        if c.tensor(3).shape != (units,):
            raise c.refuse(f"bias {list(c.tensor(3).shape)} is not [filters / rank] = [{units}]")
    m1, s1 = tflite_multiplier(_f32(in_s, wf_s, state_s))
    m2, s2 = tflite_multiplier(_f32(state_s, wt_s, out_s))
    p = SvdfParams(batch=batch, input_size=n_in, filters=filters, memory=memory, rank=rank, input_zero_point=in_zp,
                   output_zero_point=out_zp, feature_multiplier=m1, feature_shift=s1, output_multiplier=m2,
                   output_shift=s2)
    return c.layer(x, tuple(names), p, lambda a, w, t, s, b=None: blocks.svdf(a, w, t, b, s, p)[0])


OPS = {"SVDF": svdf}
