"""int8 subtract (TFLite's SUB: ADD's scheme with the second input's scaled value subtracted; its
scale arithmetic in float32 as TFLite Micro's Prepare does it) and the GRU it completes: the
.tflite readers (int8 and float) against TFLite Micro, quantize() of a difference, and a GRU
written as a user writes one -- a Python loop over two steps of dense layers, sigmoid and tanh
gates, products and the difference h - n -- quantized and run in every variant on QEMU equal to
its JAX values. CMSIS-NN v7.0.0 has no s8 subtract: the block stays XLA's code."""

from __future__ import annotations

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, model_namespace
from test_tflite_import import ACT, OP, act8, actf, check, fb, model_bytes, operator, spread

from specializer.quant.graph import QuantizeError
from specializer.quant.params import SubParams
from specializer.quant.ptq import quantize


def sub_options(act=ACT.NONE):
    o = fb.SubOptionsT()
    o.fusedActivationFunction = act
    return o, fb.BuiltinOptions.SubOptions


def sub_model(shape=(1, 5, 6, 3), q1=(0.05, 3), q2=(0.08, -20), out=(0.1, 5), act=ACT.NONE) -> bytes:
    x1, x2, y = act8(shape, *q1, "x1"), act8(shape, *q2, "x2"), act8(shape, *out, "y")
    return model_bytes([operator(OP.SUB, [x1, x2], [y], *sub_options(act))], [x1, x2], [y])


CASES = {
    "nhwc": dict(),
    "odd_2d": dict(shape=(3, 7), q1=(0.1, -128), q2=(0.03, 127), out=(0.07, -7)),
    "relu": dict(act=ACT.RELU, out=(0.04, -30)),
    "same_scales": dict(q1=(0.05, 0), q2=(0.05, 0), out=(0.05, 0)),
}


@pytest.mark.parametrize("case", CASES)
def test_reader_equals_tflite_micro(case, tmp_path):
    data = sub_model(**CASES[case])
    out = check(data, tmp_path, n=4)
    assert spread(out) >= 10, out
    path = tmp_path / "m.tflite"
    from specializer.importers.tflite import read_tflite

    assert isinstance(read_tflite(path).layers[0].block, SubParams)


def test_float_sub_equals_tflite_micro(tmp_path):
    x1, x2, y = actf((2, 9), "x1"), actf((2, 9), "x2"), actf((2, 9), "y")
    out = check(model_bytes([operator(OP.SUB, [x1, x2], [y], *sub_options(ACT.RELU))], [x1, x2], [y]), tmp_path)
    assert (out > 0).sum() > 4 and (out == 0).sum() > 4


def test_quantize_refuses_a_constant_minus_an_activation():
    import jax

    def f(x):
        return 1.0 - jax.nn.sigmoid(x)

    with pytest.raises(QuantizeError, match="only the difference of two activations"):
        quantize(f, {}, [{"x": np.ones((2, 3), np.float32)}])


GRU = '''
import jax
import jax.numpy as jnp
import numpy as np

from specializer.quant.ptq import quantize

STEPS, FEATURES, CELLS, CLASSES = 2, 6, 5, 3


def float_gru(xs, h0, wz, uz, bz, wr, ur, br, wn, un, bn, bhn, fc):
    """A GRU over STEPS frames from the state h0 (the caller's, carried between calls), then a
    dense layer on the last state."""
    h = h0
    for t in range(STEPS):
        x = xs[t:t + 1]
        z = jax.nn.sigmoid(x @ wz + bz + h @ uz)
        r = jax.nn.sigmoid(x @ wr + br + h @ ur)
        n = jnp.tanh(x @ wn + bn + r * (h @ un + bhn))
        h = n + z * (h - n)
    return h @ fc


rng = np.random.default_rng(11)
W = {k: (rng.standard_normal(s) * 0.5).astype(np.float32) for k, s in
     {"wz": (FEATURES, CELLS), "uz": (CELLS, CELLS), "bz": (CELLS,), "wr": (FEATURES, CELLS), "ur": (CELLS, CELLS),
      "br": (CELLS,), "wn": (FEATURES, CELLS), "un": (CELLS, CELLS), "bn": (CELLS,), "bhn": (CELLS,),
      "fc": (CELLS, CLASSES)}.items()}
calibration = [{"xs": rng.standard_normal((STEPS, FEATURES)).astype(np.float32),
                "h0": np.tanh(rng.standard_normal((1, CELLS))).astype(np.float32)} for _ in range(16)]
gru_int8, params = quantize(float_gru, W, calibration, name="gru_int8")
gru_int8.example_inputs = {k: gru_int8.inputs[k].quantize(v) for k, v in calibration[0].items()}
gru_int8.weights = params
'''


def test_the_gru_quantizes_into_blocks_close_to_float():
    ns = model_namespace(GRU, "gru_int8.py")
    model, qp = ns["gru_int8"], ns["params"]
    kinds = [s.kind for s in model.steps]
    assert kinds.count("sub") == 2 and kinds.count("mul") == 4 and kinds.count("tanh") == 2, kinds
    assert kinds.count("logistic") == 4 and kinds[-1] == "dense"
    q = model.outputs[0]
    for cal in ns["calibration"][:4]:
        (got,) = model.run_float(qp, **cal)
        ref = np.asarray(ns["float_gru"](cal["xs"], cal["h0"], **ns["W"]))
        assert np.abs(got - ref).max() <= 6 * q.scale, (got, ref)


def test_the_gru_in_every_variant_equal_to_jax(tmp_path):
    c = captured_source(GRU, "gru_int8", tmp_path)
    assert any("no CMSIS-NN s8 subtract" in line for line in c.log), c.log
    assert sum("onto arm_elementwise_mul_s8" in line for line in c.log) == 4
    every_variant_passes(c.model_ll, tmp_path, exact=True)
