"""int8 LSTM (TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM, fully integer: int16 cell state): the block
(specializer.quant.lstm) and the .tflite reader against TFLite Micro's own kernel, bit for bit,
over whole sequences (the states evolve within each); the int16 sigmoid and tanh over every
input; what the reader refuses. Every variant on QEMU: test_lstm_models.py."""

from __future__ import annotations

import ctypes

import jax
import numpy as np
import pytest
from test_cmsis_nn import host  # noqa: F401
from test_tflite_import import OP, Tflm, act8, const, fb, me, model_bytes, operator

from specializer.errors import UserError
from specializer.importers.tflite import read_tflite

# batch, time, input size, cells, time major, cell clip, cell gate activation, input zp, hidden zp
CASES = {
    "kws_like": (1, 8, 10, 16, False, 0.0, "TANH", -3, 5),
    "odd_sizes": (1, 5, 7, 9, False, 0.0, "TANH", 11, -7),
    "batch2": (2, 4, 6, 5, False, 0.0, "TANH", 0, 0),
    "time_major_batch2": (2, 3, 6, 5, True, 0.0, "TANH", 4, -2),
    "cell_clip": (1, 6, 8, 8, False, 0.2, "TANH", -5, 3),  # a clip the cell reaches
    "keyword": (1, 6, 10, 12, False, 0.0, "TANH", -3, 5),
}
IN_SCALE, HIDDEN_SCALE, CELL_SCALE = 0.05, 1 / 128, 2.0 ** -11


def lstm_model(name, seed=0, **kw) -> bytes:
    op, x, y = lstm_op(name, seed, **kw)
    return model_bytes([op], [x], [y])


def lstm_op(name, seed=0, *, cell_scale=CELL_SCALE, peephole=False, hidden_type=fb.TensorType.INT8, cell_clip=None,
            diagonal=False):
    """One UNIDIRECTIONAL_SEQUENCE_LSTM as TFLite's converter writes a fully integer one: 24 inputs,
    int8 weights per tensor, int32 biases, an int8 hidden and an int16 cell state (variables).
    Returns (the operator, its input, its output)."""
    batch, time, n_in, cells, time_major, clip, act, in_zp, h_zp = CASES[name]
    rng = np.random.default_rng(seed)
    shape = (time, batch, n_in) if time_major else (batch, time, n_in)
    x = act8(shape, IN_SCALE, in_zp, "x")
    # weight scales that put each gate's sums at about 1.5 (std) of the 2**-12 gate scale's 8
    wx_s = 1.0 / (74 * 73 * np.sqrt(n_in) * IN_SCALE)
    wh_s = 1.0 / (74 * 73 * np.sqrt(cells) * HIDDEN_SCALE)
    wx = [const(rng.integers(-127, 128, (cells, n_in)).astype(np.int8), [wx_s], None, f"wx{k}") for k in range(4)]
    wh = [const(rng.integers(-127, 128, (cells, cells)).astype(np.int8), [wh_s], None, f"wh{k}")
          for k in range(4)]
    bias_s = float(np.float32(IN_SCALE) * np.float32(wx_s))
    biases = [const(rng.integers(-4000, 4000, cells).astype(np.int32), [bias_s], None, f"b{k}") for k in range(4)]
    hidden = me.Tensor(shape=(batch, cells), dtype=hidden_type, quantization=me.Quantization(HIDDEN_SCALE, h_zp),
                       name="hidden")
    cell = me.Tensor(shape=(batch, cells), dtype=fb.TensorType.INT16, quantization=me.Quantization(cell_scale, 0),
                     name="cell")
    hidden.is_variable = cell.is_variable = True
    y = act8(shape[:2] + (cells,), HIDDEN_SCALE, h_zp, "y")
    # TFLite's order: input; input-to-{input, forget, cell, output}; recurrent-to-{...}; 3
    # peepholes; 4 biases {input, forget, cell, output}; projection weights, bias; the states; 4
    # layer norms. Ours in gate order forget, input, cell, output: index 0 is forget
    order = (1, 0, 2, 3)
    peep = [const(np.ones(cells, np.int16).astype(np.int8), [0.01], None, "peep")] if peephole else [None]
    ins = ([x] + [wx[k] for k in order] + [wh[k] for k in order] + peep + [None, None]
           + [biases[k] for k in order] + [None, None, hidden, cell] + [None] * 4)
    o = fb.UnidirectionalSequenceLSTMOptionsT()
    o.fusedActivationFunction = getattr(fb.ActivationFunctionType, act)
    o.cellClip, o.timeMajor = clip if cell_clip is None else cell_clip, time_major
    o.diagonalRecurrentTensors = diagonal
    op = operator(OP.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [y], o, fb.BuiltinOptions.UnidirectionalSequenceLSTMOptions)
    return op, x, y


def spread(out: np.ndarray) -> int:
    return len(np.unique(out[(out > -128) & (out < 127)]))


def read_equals_tflite_micro(data: bytes, tmp_path, n: int, seed: int) -> np.ndarray:
    """The reader's function on n random inputs (one jit) against TFLite Micro, reset before each
    input (one call from the start states), bit for bit; returns the outputs."""
    path = tmp_path / "lstm.tflite"
    path.write_bytes(data)
    model = read_tflite(path)
    xs = np.random.default_rng(seed).integers(-128, 128, (n, *model.inputs[0].shape)).astype(np.int8)
    got = np.asarray(jax.jit(jax.vmap(model))(xs))
    tflm = Tflm(data)
    for x, g in zip(xs, got):
        tflm.it.reset()
        np.testing.assert_array_equal(g, tflm.run([x], 1)[0][0])
    return got


@pytest.mark.parametrize("name", CASES)
def test_reader_equals_tflite_micro_over_sequences(name, tmp_path):
    got = read_equals_tflite_micro(lstm_model(name), tmp_path, 4, 5)
    assert spread(got) >= min(30, got.size // 4), got


def keyword_lstm(seed=0) -> bytes:
    """A small keyword model as TFLite's converter writes one: 6 frames of 10 features through an
    LSTM of 12 cells, every frame's state flattened (RESHAPE) into FULLY_CONNECTED -> SOFTMAX."""
    rng = np.random.default_rng(seed)
    op, x, h = lstm_op("keyword", seed)
    flat = act8((1, 72), HIDDEN_SCALE, CASES["keyword"][-1], "flat")  # RESHAPE keeps the LSTM's quantization
    shape = const(np.array([1, 72], np.int32), name="shape")
    logit_s = 0.06
    w_s = 40 * logit_s / (HIDDEN_SCALE * 40 * 73 * np.sqrt(72))
    w = const(rng.integers(-127, 128, (8, 72)).astype(np.int8), [w_s], None, "fc")
    b = const(rng.integers(-2000, 2000, 8).astype(np.int32), [float(np.float32(HIDDEN_SCALE) * np.float32(w_s))], None,
              "fc_bias")
    logits, y = act8((1, 8), logit_s, 1, "logits"), act8((1, 8), 1 / 256, -128, "y")
    so = fb.SoftmaxOptionsT()
    so.beta = 1.0
    ops = [op, operator(OP.RESHAPE, [h, shape], [flat]),
           operator(OP.FULLY_CONNECTED, [flat, w, b], [logits], fb.FullyConnectedOptionsT(),
                    fb.BuiltinOptions.FullyConnectedOptions),
           operator(OP.SOFTMAX, [logits], [y], so, fb.BuiltinOptions.SoftmaxOptions)]
    return model_bytes(ops, [x], [y])


@pytest.mark.parametrize("kw, message", [
    (dict(peephole=True), "has peephole weights .input 9."),
    (dict(cell_scale=0.0003), "cell state scale .* a power of two"),
    (dict(hidden_type=fb.TensorType.INT16), "hidden state .* is INT16; the reader takes INT8"),
    (dict(cell_clip=1e-4), "cell clip 0.0001 is below the cell state's scale 0.000488281"),
    (dict(diagonal=True), "diagonal recurrent weights"),
    (dict(cell_scale=2.0 ** 16), "outside 2..-30..2..15"),
], ids=["peephole", "cell_scale", "int16_hidden", "tiny_clip", "diagonal", "cell_power"])
def test_reader_refuses_in_one_line(kw, message, tmp_path):
    path = tmp_path / "bad.tflite"
    path.write_bytes(lstm_model("odd_sizes", **kw))
    with pytest.raises(UserError, match=message) as e:
        read_tflite(path)
    assert "\n" not in str(e.value) and "bad.tflite" in str(e.value) and "UNIDIRECTIONAL_SEQUENCE_LSTM" in str(e.value)


def test_keyword_model_reads_equal_to_tflite_micro(tmp_path):
    got = read_equals_tflite_micro(keyword_lstm(), tmp_path, 3, 9)
    assert len(np.unique(got)) >= 8, got  # the softmax spreads


# ---------------------------------------------------------------- the shim's arm_lstm_unidirectional_s8

def run_shim(lib, p, wx, wh, bx, x):
    """arm_lstm_unidirectional_s8 on the host with the parameters capture writes
    (cmsis_calls_lstm.lower): effective biases with the zero points folded in."""
    from test_cmsis_nn import STRUCT, nn_call, ptr

    from specializer.capture.cmsis_calls_lstm import GATES, SIGMOID, TANH

    keep = []

    def arr(a, dtype):
        a = np.ascontiguousarray(a, dtype)
        keep.append(a)
        return a.ctypes.data

    gates = {}
    for k, g in enumerate(GATES):
        eff_x = bx[k].astype(np.int64) - p.input_zero_point * wx[k].astype(np.int64).sum(axis=1)
        eff_h = -p.hidden_zero_point * wh[k].astype(np.int64).sum(axis=1)
        m1, s1, m2, s2 = p.gates[k]
        gates[g] = STRUCT["cmsis_nn_lstm_gate"](
            input_multiplier=m1, input_shift=s1, input_weights=arr(wx[k], np.int8),
            input_effective_bias=arr(eff_x, np.int32), hidden_multiplier=m2, hidden_shift=s2,
            hidden_weights=arr(wh[k], np.int8), hidden_effective_bias=arr(eff_h, np.int32), bias=None,
            activation_type=TANH if g == "cell_gate" else SIGMOID)
    params = STRUCT["cmsis_nn_lstm_params"](
        time_major=int(p.time_major), batch_size=p.batch, time_steps=p.time, input_size=p.input_size,
        hidden_size=p.cells, input_offset=-p.input_zero_point, forget_to_cell_multiplier=p.forget_mul[0],
        forget_to_cell_shift=p.forget_mul[1], input_to_cell_multiplier=p.input_mul[0],
        input_to_cell_shift=p.input_mul[1], cell_clip=p.cell_clip, cell_scale_power=p.cell_scale_power,
        output_multiplier=p.output_mul[0], output_shift=p.output_mul[1], output_offset=p.hidden_zero_point,
        **gates)
    temps = [np.full(p.batch * p.cells, 77, np.int16) for _ in range(3)]  # the function clears the cell
    buffers = STRUCT["cmsis_nn_lstm_context"](*(t.ctypes.data for t in temps))
    out = np.full(p.output_shape, 99, np.int8)
    lib.arm_lstm_unidirectional_s8.restype = ctypes.c_int32
    st = nn_call(lib, "arm_lstm_unidirectional_s8", input=ptr(np.ascontiguousarray(x)), output=ptr(out),
                 params=ctypes.byref(params), buffers=ctypes.byref(buffers))
    assert st == 0
    return out


@pytest.mark.parametrize("name", CASES)
def test_shim_equals_tflite_micro(host, name, tmp_path):
    data = lstm_model(name)
    path = tmp_path / "lstm.tflite"
    path.write_bytes(data)
    model = read_tflite(path)
    layer = model.layers[0]
    w = [model.weights[n] for n in layer.weights]
    tflm = Tflm(data)
    rng = np.random.default_rng(13)
    for _ in range(3):
        x = rng.integers(-128, 128, model.inputs[0].shape).astype(np.int8)
        tflm.it.reset()
        np.testing.assert_array_equal(run_shim(host, layer.block, w[0:4], w[4:8], w[8:12], x),
                                      tflm.run([x], 1)[0][0])
