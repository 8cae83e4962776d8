"""quantize() on an LSTM written with lax.scan: TFLite's integer UNIDIRECTIONAL_SEQUENCE_LSTM
(the block of quant/lstm.py, bit-exact with TFLite Micro in test_lstm_s8.py), lowered onto
arm_lstm_unidirectional_s8. A keyword model as a user writes one (6 frames of 10 features, 12
cells, the last step's hidden state into a dense layer); the other spellings lstm_scan.py reads
(per-gate products, (c, h) carries, another gate order, no batch axis); the LSTMs it cannot take,
in one line (any other scan is unrolled into its steps: test_quantize_scan.py); and every variant
on QEMU equal to the model's JAX values."""

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, model_namespace

from specializer.quant.graph import QuantizeError
from specializer.quant.ptq import quantize

MODEL = '''
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.quant.ptq import quantize


def kws_lstm(x, wx, wh, b, wd, bd):
    def step(carry, frame):
        h, c = carry
        z = frame @ wx + h @ wh + b
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    cells = wh.shape[0]
    _, hs = lax.scan(step, (jnp.zeros((1, cells)), jnp.zeros((1, cells))), x)   # x [6, 1, 10]
    return hs[-1] @ wd + bd                                                       # 1x8


rng = np.random.default_rng(21)
W = {"wx": rng.normal(size=(10, 48)) * 0.3, "wh": rng.normal(size=(12, 48)) * 0.3, "b": rng.normal(size=48) * 0.1,
     "wd": rng.normal(size=(12, 8)), "bd": rng.normal(size=8) * 0.1}
W = {k: v.astype(np.float32) for k, v in W.items()}
calibration = [{"x": rng.standard_normal((6, 1, 10)).astype(np.float32)} for _ in range(16)]
kws_lstm_int8, params = quantize(kws_lstm, W, calibration, name="kws_lstm_int8")
kws_lstm_int8.example_inputs = {"x": kws_lstm_int8.inputs["x"].quantize(calibration[0]["x"])}
kws_lstm_int8.weights = params
'''


def _close(fn, weights, calibration, tol: float):
    """The int8 model against the float one on calibration inputs, within `tol` of the outputs' magnitude."""
    model, qp = quantize(fn, weights, calibration)
    refs = np.stack([np.asarray(fn(**sample, **weights)) for sample in calibration[:6]])
    got = np.stack([model.run_float(qp, **sample) for sample in calibration[:6]])
    assert got.shape == refs.shape and np.abs(got - refs).max() <= tol * np.abs(refs).max()
    return model


def test_the_keyword_lstm_is_one_block_close_to_float():
    ns = model_namespace(MODEL, "kws_lstm_int8.py")
    model = _close(ns["kws_lstm"], ns["W"], ns["calibration"], 0.05)
    assert [s.kind for s in model.steps] == ["lstm", "move", "reshape", "dense"]
    p = model.steps[0].block
    assert (p.time, p.batch, p.input_size, p.cells, p.time_major) == (6, 1, 10, 12, True)
    assert len(model.steps[0].arrays) == 12 and -30 <= p.cell_scale_power <= 15


def _other_spelling(x, wi, wf, wg, wo, ui, uf, ug, uo, bf):
    """Per-gate products, carries (c, h), the bias on one gate only, no batch axis."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def step(carry, frame):
        c, h = carry
        f = jax.nn.sigmoid(frame @ wf + h @ uf + bf)
        new_c = jnp.tanh(frame @ wg + h @ ug) * jax.nn.sigmoid(h @ ui + frame @ wi) + c * f
        new_h = jnp.tanh(new_c) * jax.nn.sigmoid(frame @ wo + h @ uo)
        return (new_c, new_h), new_h

    _, hs = lax.scan(step, (jnp.zeros(5), jnp.zeros(5)), x)  # x [7, 3]
    return hs


def test_per_gate_products_and_other_orders_are_read():
    rng = np.random.default_rng(22)
    w = {f"w{g}": rng.normal(size=(3, 5)).astype(np.float32) for g in "ifgo"}
    w |= {f"u{g}": (rng.normal(size=(5, 5)) * 0.5).astype(np.float32) for g in "ifgo"}
    w["bf"] = np.ones(5, np.float32)
    cal = [{"x": rng.standard_normal((7, 3)).astype(np.float32)} for _ in range(12)]
    model = _close(_other_spelling, w, cal, 0.05)
    assert [s.kind for s in model.steps] == ["lstm"] and model.steps[0].block.batch == 1


def _joined_spelling(x, w, b):
    """One product of the input and hidden state joined (a Flax-style cell), gates i, g, f, o."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def step(carry, frame):
        h, c = carry
        i, g, f, o = jnp.split(jnp.concatenate([frame, h], axis=-1) @ w + b, 4, axis=-1)
        c = c * jax.nn.sigmoid(f) + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    return lax.scan(step, (jnp.zeros((2, 6)), jnp.zeros((2, 6))), x)[1]  # x [5, 2, 4]: a batch of two


def test_input_and_state_joined_in_one_product_is_read():
    rng = np.random.default_rng(23)
    w = {"w": (rng.normal(size=(10, 24)) * 0.5).astype(np.float32), "b": (rng.normal(size=24) * 0.1).astype(np.float32)}
    cal = [{"x": rng.standard_normal((5, 2, 4)).astype(np.float32)} for _ in range(12)]
    model = _close(_joined_spelling, w, cal, 0.05)
    assert [s.kind for s in model.steps] == ["lstm"] and model.steps[0].block.batch == 2


def _refused(fn, params, x, match: str):
    with pytest.raises(QuantizeError) as e:
        quantize(fn, params, [{"x": x}])
    assert "\n" not in str(e.value) and "unsupported op '" in str(e.value)
    assert match in str(e.value), str(e.value)


def test_lstms_quantize_cannot_take_are_refused_in_one_line():
    import jax
    import jax.numpy as jnp
    from jax import lax

    x = np.ones((4, 3), np.float32)
    wx, wh = np.full((3, 8), 0.1, np.float32), np.full((2, 8), 0.1, np.float32)

    def cell(carry, frame):
        h, c = carry
        i, f, g, o = jnp.split(frame @ wx + h @ wh, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), h

    def from_ones(x):
        return lax.scan(cell, (jnp.ones(2), jnp.zeros(2)), x)[1]

    def final_state(x):
        (h, _), _ = lax.scan(cell, (jnp.zeros(2), jnp.zeros(2)), x)
        return h

    # unrolled into its steps (test_quantize_scan.py), whose first reads the constant state
    _refused(from_ones, {}, x, "which quantize() unrolled: not an LSTM, the states must start at zero")
    _refused(final_state, {}, x, "unsupported op 'scan'")
    _refused(final_state, {}, x, "final states are read")


def test_in_every_variant_equal_to_jax(tmp_path):
    c = captured_source(MODEL, "kws_lstm_int8", tmp_path)
    assert any("onto arm_lstm_unidirectional_s8" in line for line in c.log)
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def test_an_lstm_with_peepholes_is_unrolled_into_ordinary_blocks():
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = np.random.default_rng(31)
    t, n, c = 3, 6, 4
    w = {"wx": rng.normal(size=(n, 4 * c)).astype(np.float32) * 0.3,
         "wh": rng.normal(size=(c, 4 * c)).astype(np.float32) * 0.3,
         "b": rng.normal(size=4 * c).astype(np.float32) * 0.1, "pf": rng.normal(size=c).astype(np.float32) * 0.2}

    def peephole(xs, wx, wh, b, pf):  # the forget gate sees the cell: no int8 LSTM block takes that
        def step(carry, x):
            h, cell = carry
            i, f, g, o = jnp.split(x @ wx + h @ wh + b, 4, axis=-1)
            cell = jax.nn.sigmoid(f + cell * pf) * cell + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(cell)
            return (h, cell), h

        zeros = jnp.zeros((1, c))
        return lax.scan(step, (zeros, zeros), xs)[1][-1]

    cal = [{"xs": rng.normal(size=(t, 1, n)).astype(np.float32)} for _ in range(12)]
    model = _close(peephole, w, cal, 0.05)
    kinds = [s.kind for s in model.steps]
    assert "lstm" not in kinds and kinds.count("tanh") == 2 * t and kinds.count("move") >= 4 * t, kinds
