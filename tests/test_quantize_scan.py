"""quantize() on a lax.scan that is no LSTM (scan_unroll.py): unrolled into its steps, each step's
operations quantized like any others, the weights the steps share stored once. A GRU written as
a user writes one with lax.scan (a step function of dense layers, sigmoid and tanh gates, products
and the difference h - n, from a state the caller carries between calls) is the same int8 model as
the same GRU written as a Python loop; one from a zero state, h = (1 - z) n + z h, takes its
constants as int8 tensors and runs in every variant on QEMU equal to its JAX values; a scan whose
steps hold an op no block has, or too many steps, is one line naming it."""

from __future__ import annotations

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, jitted, model_namespace

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

# a GRU as most are written: from a zero state, h = (1 - z) n + z h (constants in the first step
# and in 1 - z: int8 tensors of their own)
GRU_ZERO = _HEAD + '''

def float_gru(xs, wz, uz, bz, wr, ur, br, wn, un, bn, bhn, fc):
    def step(h, x):
        x = x[None]
        z = jax.nn.sigmoid(x @ wz + bz + h @ uz)
        r = jax.nn.sigmoid(x @ wr + br + h @ ur)
        n = jnp.tanh(x @ wn + bn + r * (h @ un + bhn))
        h = (1.0 - z) * n + z * h
        return h, h

    h, _ = lax.scan(step, jnp.zeros((1, CELLS)), xs)
    return h @ fc

''' + _TAIL.replace(',\n                "h0": np.tanh(rng.standard_normal((1, CELLS))).astype(np.float32)}', "}")

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
    a, b = scan["gru_int8"], loop["gru_int8"]
    run_a, run_b = jitted(a), jitted(b)
    for cal in scan["calibration"][:6]:
        xa = {k: a.inputs[k].quantize(v) for k, v in cal.items()}
        xb = {k: b.inputs[k].quantize(v) for k, v in cal.items()}
        assert np.array_equal(np.asarray(run_a(**xa, **scan["params"])), np.asarray(run_b(**xb, **loop["params"])))


def test_close_to_float(scan_and_loop):
    ns = scan_and_loop[0]
    model, qp = ns["gru_int8"], ns["params"]
    q = model.outputs[0]
    for cal in ns["calibration"][:4]:
        (got,) = model.run_float(qp, **cal)
        ref = np.asarray(ns["float_gru"](cal["xs"], cal["h0"], **ns["W"]))
        assert np.abs(got - ref).max() <= 6 * q.scale, (got, ref)


def test_from_a_zero_state_close_to_float():
    ns = model_namespace(GRU_ZERO, "gru_int8.py")
    model, qp = ns["gru_int8"], ns["params"]
    kinds = [s.kind for s in model.steps]
    assert kinds.count("const") >= 4 and kinds.count("tanh") == 2, kinds  # 1 - z each step, zeros in the first
    q = model.outputs[0]
    for cal in ns["calibration"][:4]:
        (got,) = model.run_float(qp, **cal)
        ref = np.asarray(ns["float_gru"](cal["xs"], **ns["W"]))
        assert np.abs(got - ref).max() <= 6 * q.scale, (got, ref)


def test_in_every_variant_equal_to_jax(tmp_path):
    c = captured_source(GRU_ZERO, "gru_int8", tmp_path)
    assert any("no CMSIS-NN subtract" in line for line in c.log), c.log
    # per step r * (h U + b), z * h, (1 - z) * n; the adds, constants' too, on CMSIS-NN's
    assert sum("onto arm_elementwise_mul_s8" in line for line in c.log) == 6, c.log
    assert sum("onto arm_elementwise_add_s8" in line for line in c.log) == 8, c.log
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_a_step_with_no_block_and_too_many_steps_are_one_line():
    import jax.numpy as jnp
    from jax import lax

    x = np.ones((4, 3), np.float32)

    def running_exp(x):
        return lax.scan(lambda s, v: (s + jnp.exp(v), s), x[0], x)[1]

    with pytest.raises(QuantizeError) as e:
        quantize(running_exp, {}, [{"x": x}])
    msg = str(e.value)
    assert "\n" not in msg and "unsupported op 'exp'" in msg and "test_quantize_scan.py" in msg, msg
    assert "in a step of the lax.scan at" in msg and "which quantize() unrolled: not an LSTM" in msg, msg

    def long(x):
        return lax.scan(lambda h, v: (jnp.tanh(h + v), h), x[0], x)[1]

    with pytest.raises(QuantizeError, match=r"^quantize: a lax.scan of 300 steps that is not an LSTM: .* 1 to 256 "):
        quantize(long, {}, [{"x": np.ones((300, 3), np.float32)}])


def _close(fn, params, cal, steps: float = 3.0):
    model, qp = quantize(fn, params, cal)
    q = model.outputs[0]
    for c in cal[:4]:
        got = model.run_float(qp, **c)
        assert np.abs(got - np.asarray(fn(**c, **params))).max() <= steps * q.scale
    return model, qp


@pytest.mark.parametrize("reverse", [False, True])
def test_a_running_filter_whose_every_step_is_read(reverse):
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(5)
    w = {"a": (rng.normal(size=(4, 4)) * 0.4).astype(np.float32), "b": (rng.normal(size=(3, 4)) * 0.5).astype(np.float32)}

    def smooth(xs, h0, a, b):  # xs [5, 1, 3] -> every step's state [5, 1, 4]
        return lax.scan(lambda h, x: (jnp.tanh(h @ a + x @ b), h), h0, xs, reverse=reverse)[1]

    cal = [{"xs": rng.normal(size=(5, 1, 3)).astype(np.float32),
            "h0": np.tanh(rng.normal(size=(1, 4))).astype(np.float32)} for _ in range(8)]
    model, qp = _close(smooth, w, cal)
    kinds = [s.kind for s in model.steps]
    assert kinds.count("tanh") == 5 and kinds.count("concat") == 1, kinds
    assert "a" in qp and "b" in qp and not any(k.startswith(("a_", "b_")) for k in qp), list(qp)  # once each


def test_nested_scans_unroll_in_one_pass_each():
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(6)
    w = {"a": (rng.normal(size=(3, 3)) * 0.5).astype(np.float32)}

    def inner(h, a):
        return lax.scan(lambda g, _: (jnp.tanh(g @ a), None), h, None, length=2)[0]

    def outer(xs, a):  # 12 outer steps around 2 inner ones: 24 products, two unroll passes
        return lax.scan(lambda h, x: (inner(h + x, a), None), xs[0], xs)[0]

    cal = [{"xs": rng.normal(size=(12, 1, 3)).astype(np.float32)} for _ in range(6)]
    model, qp = _close(outer, w, cal)
    assert [s.kind for s in model.steps].count("dense") == 24 and list(qp) == ["a"]


def test_an_op_after_the_scan_is_not_blamed_on_it():
    import jax.numpy as jnp
    from jax import lax

    def f(x):
        h = lax.scan(lambda h, v: (jnp.tanh(h + v), h), x[0], x)[0]
        return jnp.exp(h)

    with pytest.raises(QuantizeError) as e:
        quantize(f, {}, [{"x": np.ones((3, 2), np.float32)}])
    assert "unsupported op 'exp'" in str(e.value) and "in a step of" not in str(e.value), str(e.value)


def test_a_weight_two_layers_share_is_stored_once():
    import jax

    rng = np.random.default_rng(7)
    w = {"w": (rng.normal(size=(4, 4)) * 0.5).astype(np.float32)}

    def twice(x, w):
        return jax.nn.relu(x @ w) @ w

    model, qp = _close(twice, w, [{"x": rng.normal(size=(1, 4)).astype(np.float32)} for _ in range(6)])
    assert [s.weight for s in model.steps] == ["w", "w"] and sum(a.shape == (4, 4) for a in qp.values()) == 1
