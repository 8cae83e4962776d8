"""The int8 LSTM block (params.LstmParams): TFLite Micro's integer LSTM step (lstm_eval.h,
lstm_eval.cc), in JAX over the sequence with lax.scan.

Per step, with the hidden state h (int8) and cell state c (int16) of the step before:
  gate = sat16(fc(x, W_x, bias) + fc(h, W_h))   each fc requantized into int16 at 2**-12
  f, i, o = sigmoid16(gate)   g = tanh16(cell gate), int16 at 2**-15
  c = sat16(mul16(f, c) + mul16(i, g)), clipped to +-cell_clip when it is set
  h = int8(requantize(tanh16(c at 2**cell_scale_power) * o) + hidden zero point)
and h is the step's output. sigmoid16 / tanh16 are TFLite's int16 Logistic / Tanh: a 256-entry
table of sigmoid(k / 24) in 0.16, linearly interpolated.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from specializer.quant import calls
from specializer.quant.activations_s16 import sigmoid16  # multiplier 3, no shift: Q3.12 in, Q0.15 out
from specializer.quant.activations_s16 import tanh16 as _tanh16
from specializer.quant.blocks import _matmul_nt
from specializer.quant.fixedpoint import requantize
from specializer.quant.params import LstmParams

GATE_SCALE, GATE_OUT_SCALE = 2.0 ** -12, 2.0 ** -15  # TFLite Micro's int16 gate scales (Q3.12, Q0.15)
CELL_POWERS = (-30, 15)  # cell state scales 2**p the block takes (the int16 tanh's input shift stays in an int32)


def tanh16(x, cell_scale_power: int = -12):
    """TFLite's int16 Tanh as the LSTM calls it: input at 2**cell_scale_power, output Q0.15."""
    shift = 15 + cell_scale_power - 3
    return _tanh16(x, 3 << shift, 0) if shift >= 0 else _tanh16(x, 3, -shift)


def _sat16(v):
    return jnp.clip(v, -32768, 32767)


def _mul(a, b, pair):
    """MulElementwise of two int16 (offsets 0): the product requantized, before the clamp."""
    return requantize(a.astype(jnp.int32) * b.astype(jnp.int32), *pair)


def _fc(x, w, zero_point: int, mult: int, shift: int, bias=None):
    """int8 x [batch, k] . int8 w [n, k] with the input zero point, into int16."""
    acc = _matmul_nt(x, w) - jnp.int32(zero_point) * jnp.sum(w, axis=1, dtype=jnp.int32)
    if bias is not None:
        acc = acc + bias
    return _sat16(requantize(acc, mult, shift))


def lstm(x, w_input, w_recurrent, biases, p: LstmParams):
    """x int8 p.input_shape; w_input 4 int8 [cells, input_size] and w_recurrent 4 int8 [cells,
    cells] (forget, input, cell, output gate); biases 4 int32 [cells]. The states start as
    TFLite Micro's reset leaves them: the hidden state at its zero point, the cell at 0. Returns
    the int8 output p.output_shape.

    Captured, the block is one call of CMSIS-NN's arm_lstm_unidirectional_s8 (which starts from
    those states itself): its operands are the input, the eight weights and each gate's
    effective biases, the zero points folded in (input: bias - input zero point * row sums;
    recurrent: - hidden zero point * row sums)."""
    with jax.named_scope(p.scope):
        eff_x = [b - jnp.int32(p.input_zero_point) * jnp.sum(w, axis=1, dtype=jnp.int32)
                 for w, b in zip(w_input, biases)]
        eff_h = [-jnp.int32(p.hidden_zero_point) * jnp.sum(w, axis=1, dtype=jnp.int32) for w in w_recurrent]
    lowered = calls.call(p, p.output_shape, x, *w_input, *w_recurrent, *eff_x, *eff_h)
    if lowered is not None:
        return lowered
    with jax.named_scope(p.scope):
        xs = x if p.time_major else jnp.swapaxes(x, 0, 1)  # [time, batch, input]

        def gate(k, xt, h):
            m1, s1, m2, s2 = p.gates[k]
            return _sat16(_fc(xt, w_input[k], p.input_zero_point, m1, s1, biases[k]).astype(jnp.int32)
                          + _fc(h, w_recurrent[k], p.hidden_zero_point, m2, s2).astype(jnp.int32))

        def step(carry, xt):
            h, c = carry
            f = sigmoid16(gate(0, xt, h))
            i = sigmoid16(gate(1, xt, h))
            g = tanh16(gate(2, xt, h))
            c = _sat16(_sat16(_mul(f, c, p.forget_mul)) + _sat16(_mul(i, g, p.input_mul)))
            if p.cell_clip:
                c = jnp.clip(c, -p.cell_clip, p.cell_clip)
            c = c.astype(jnp.int16)
            o = sigmoid16(gate(3, xt, h))
            h = jnp.clip(_mul(tanh16(c, p.cell_scale_power), o, p.output_mul) + p.hidden_zero_point, -128, 127)
            h = h.astype(jnp.int8)
            return (h, c), h

        start = (jnp.full((p.batch, p.cells), p.hidden_zero_point, jnp.int8), jnp.zeros((p.batch, p.cells), jnp.int16))
        _, ys = lax.scan(step, start, xs)
        return ys if p.time_major else jnp.swapaxes(ys, 0, 1)
