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
import numpy as np
from jax import lax

from specializer.quant import calls
from specializer.quant.blocks import _matmul_nt
from specializer.quant.fixedpoint import requantize
from specializer.quant.params import LstmParams

GATE_SCALE, GATE_OUT_SCALE = 2.0 ** -12, 2.0 ** -15  # TFLite Micro's int16 gate scales (Q3.12, Q0.15)
CELL_POWERS = (-30, 15)  # cell state scales 2**p the block takes (the int16 tanh's input shift stays in an int32)

# TFLite's sigmoid_table_uint16: sigmoid(k / 24) in 0.16 fixed point as TFLite tabulates it. The
# entries are not a rounding of the function (they differ from round(65536 * sigmoid(k / 24)) by
# -0.5 to +1.1 in 44 places), so no formula reproduces them: they are TFLite's definition of its
# int16 sigmoid and tanh, which bit-exactness needs (tests/test_lstm_s8.py: whole sequences
# bit-exact with TFLite Micro)
SIGMOID_TABLE = np.array((
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794,
    41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443,
    48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374,
    54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544,
    58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279,
    61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990,
    63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030,
    64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652,
    64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019,
    65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234,
    65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476,
    65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498, 65500, 65501,
    65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529,
    65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532,
    65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65533, 65534, 65534,
    65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535), np.int32)


def _table(index):
    return jnp.asarray(SIGMOID_TABLE)[index]


def sigmoid16(x):
    """TFLite's int16 Logistic with input multiplier 3 and no shift (Q3.12 in, Q0.15 out)."""
    v = x.astype(jnp.int32) * 3
    a = jnp.abs(v)
    uh = a >> 9
    k = jnp.minimum(uh, 254)
    ua, ub = _table(k), _table(k + 1)
    r = jnp.where(uh >= 255, jnp.int32(0x7FFF << 10), (ua << 9) + (a & 0x1FF) * (ub - ua))
    r = jnp.where(v >= 0, r + (1 << 9), (1 << 25) - r + (1 << 9) - 1)
    return (r >> 10).astype(jnp.int16)


def tanh16(x, cell_scale_power: int = -12):
    """TFLite's int16 Tanh as the LSTM calls it: input at 2**cell_scale_power, output Q0.15."""
    shift = 15 + cell_scale_power - 3
    if shift >= 0:
        mult, shift = 3 << shift, 0
    else:
        mult, shift = 3, -shift
    rnd = (1 << (shift - 1)) if shift > 0 else 0
    v = (x.astype(jnp.int32) * mult + rnd) >> shift
    a = jnp.abs(v)
    uh = a >> 8
    k = jnp.minimum(uh, 254)
    ua, ub = _table(k), _table(k + 1)
    r = jnp.where(uh >= 255, jnp.int32(0xFFFF << 8), (ua << 8) + (a & 0xFF) * (ub - ua))
    r = jnp.where(v >= 0, r - (1 << 23) + (1 << 7), -r + (1 << 23) + (1 << 7) - 1)
    return (r >> 8).astype(jnp.int16)


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
