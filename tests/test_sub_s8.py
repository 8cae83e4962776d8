"""int8 subtract (TFLite's SUB: ADD's scheme with the second input's scaled value subtracted; its
scale arithmetic in float32 as TFLite Micro's Prepare does it): the .tflite readers (int8 and
float) against TFLite Micro and quantize() of a difference. The GRU it completes, quantized and
run in every variant: test_quantize_scan.py. CMSIS-NN v7.0.0 has no s8 subtract: the block stays
XLA's code."""

from __future__ import annotations

import numpy as np
import pytest
from test_tflite_import import ACT, OP, act8, actf, check, fb, model_bytes, operator, spread

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


def test_quantize_takes_a_constant_minus_an_activation():
    import jax

    def f(x):
        return 1.0 - jax.nn.sigmoid(x)  # a GRU's 1 - z

    rng = np.random.default_rng(4)
    cal = [{"x": rng.normal(size=(2, 3)).astype(np.float32) * 3} for _ in range(8)]
    model, qp = quantize(f, {}, cal)
    assert [s.kind for s in model.steps] == ["logistic", "const", "sub"]
    q = model.outputs[0]
    for c in cal:
        got = model.run_float(qp, **c)
        assert np.abs(got - np.asarray(f(c["x"]))).max() <= 2 * q.scale
