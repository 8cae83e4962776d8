"""quantize() on a lax.scan that is no LSTM (scan_unroll.py): unrolled into its steps, each step's
operations quantized like any others, the weights the steps share stored once. A GRU written as
a user writes one with lax.scan (a step function of dense layers, sigmoid and tanh gates, products
and the difference h - n, from a state the caller carries between calls) is the same int8 model as
the same GRU written as a Python loop, and runs in every variant on QEMU equal to its JAX values;
a scan whose steps hold an op no block has, or too many steps, is one line naming it."""

from __future__ import annotations

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, model_namespace

from specializer.quant.graph import QuantizeError
from specializer.quant.ptq import quantize

_HEAD = '''
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.quant.ptq import quantize

STEPS, FEATURES, CELLS, CLASSES = 2, 6, 5, 3
'''

# the weights, the calibration data and quantize(), as the model file ends
_TAIL = '''
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

GRU_SCAN = _HEAD + '''

def float_gru(xs, h0, wz, uz, bz, wr, ur, br, wn, un, bn, bhn, fc):
    """A GRU over STEPS frames from the state h0 (the caller's), then a dense layer on the last state."""
    def step(h, x):
        x = x[None]  # one frame, a batch of one
        z = jax.nn.sigmoid(x @ wz + bz + h @ uz)
        r = jax.nn.sigmoid(x @ wr + br + h @ ur)
        n = jnp.tanh(x @ wn + bn + r * (h @ un + bhn))
        h = n + z * (h - n)
        return h, h

    h, _ = lax.scan(step, h0, xs)
    return h @ fc

''' + _TAIL

# the same GRU as a Python loop over the steps
GRU_LOOP = _HEAD + '''

def float_gru(xs, h0, wz, uz, bz, wr, ur, br, wn, un, bn, bhn, fc):
    h = h0
    for t in range(STEPS):
        x = xs[t:t + 1]
        z = jax.nn.sigmoid(x @ wz + bz + h @ uz)
        r = jax.nn.sigmoid(x @ wr + br + h @ ur)
        n = jnp.tanh(x @ wn + bn + r * (h @ un + bhn))
        h = n + z * (h - n)
    return h @ fc

''' + _TAIL


@pytest.fixture(scope="module")
def scan_and_loop():
    return model_namespace(GRU_SCAN, "gru_int8.py"), model_namespace(GRU_LOOP, "gru_loop_int8.py")


def test_the_scan_is_the_python_loop_and_stores_each_weight_once(scan_and_loop):
    scan, loop = scan_and_loop
    kinds = [s.kind for s in scan["gru_int8"].steps]
    assert kinds.count("sub") == 2 and kinds.count("mul") == 4 and kinds.count("tanh") == 2, kinds
    assert kinds.count("dense") == 13 and kinds[-1] == "dense"
    # the six weight matrices once, not once a step; so are the biases whose scale the steps share
    # (bhn's int32 scale is its step's r * (h @ un) scale, which differs)
    assert sorted(scan["params"]) == ["bhn", "bhn_", "bn", "br", "bz", "fc", "un", "ur", "uz", "wn", "wr", "wz"]
    assert sorted(loop["params"]) == sorted(scan["params"])
    for cal in scan["calibration"][:6]:
        a, b = scan["gru_int8"], loop["gru_int8"]
        xa = {k: a.inputs[k].quantize(v) for k, v in cal.items()}
        xb = {k: b.inputs[k].quantize(v) for k, v in cal.items()}
        assert np.array_equal(np.asarray(a(**xa, **scan["params"])), np.asarray(b(**xb, **loop["params"])))


def test_close_to_float(scan_and_loop):
    ns = scan_and_loop[0]
    model, qp = ns["gru_int8"], ns["params"]
    q = model.outputs[0]
    for cal in ns["calibration"][:4]:
        (got,) = model.run_float(qp, **cal)
        ref = np.asarray(ns["float_gru"](cal["xs"], cal["h0"], **ns["W"]))
        assert np.abs(got - ref).max() <= 6 * q.scale, (got, ref)


def test_in_every_variant_equal_to_jax(tmp_path):
    c = captured_source(GRU_SCAN, "gru_int8", tmp_path)
    assert any("no CMSIS-NN s8 subtract" in line for line in c.log), c.log
    assert sum("onto arm_elementwise_mul_s8" in line for line in c.log) == 4
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_a_step_with_no_block_and_too_many_steps_are_one_line():
    import jax.numpy as jnp
    from jax import lax

    x = np.ones((4, 3), np.float32)

    def running_sum(x):  # the state starts as a constant: the first step adds a constant to the input
        return lax.scan(lambda s, v: (s + v, jnp.tanh(s)), jnp.zeros(3), x)[1]

    with pytest.raises(QuantizeError) as e:
        quantize(running_sum, {}, [{"x": x}])
    msg = str(e.value)
    assert "\n" not in msg and "unsupported op 'add'" in msg and "test_quantize_scan.py" in msg, msg
    assert "in a step of the lax.scan at" in msg and "which quantize() unrolled: not an LSTM" in msg, msg

    def long(x):
        return lax.scan(lambda h, v: (jnp.tanh(h + v), h), x[0], x)[1]

    with pytest.raises(QuantizeError, match=r"^quantize: a lax.scan of 300 steps that is not an LSTM: .* 1 to 256 "):
        quantize(long, {}, [{"x": np.ones((300, 3), np.float32)}])
