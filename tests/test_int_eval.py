"""specializer.quant.int_eval: a jaxpr of integer operations run by NumPy gives XLA's results, at
the edges XLA defines (wrapping arithmetic, shifts by counts outside the width, division of
negatives, of INT32_MIN by -1 and by zero, arithmetic shifts of unsigned values, narrowing
conversions), refuses what it does not model, and the int8 activation tables built with it equal
JAX's own evaluation of the same fixed-point functions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from specializer.quant import activations, int_eval

I32 = np.array([-(1 << 31), -(1 << 31) + 1, -65536, -7, -1, 0, 1, 6, 255, 65535, (1 << 31) - 1], np.int32)


def _edges(x, s, d):
    u = lax.bitcast_convert_type(x, jnp.uint32)
    return (x + x * 3, x * x, -x, x << s, lax.shift_right_arithmetic(x, s), lax.shift_right_logical(x, s),
            lax.div(x, d), lax.rem(x, d), x.astype(jnp.int8), u >> 3,
            lax.shift_right_arithmetic(u, lax.bitcast_convert_type(s, jnp.uint32)),
            lax.div(u, lax.bitcast_convert_type(d, jnp.uint32)), jnp.where(x > s, x ^ d, x & d | 5),
            jnp.clip(x, -100, 1000), jnp.maximum(x, d), x.astype(jnp.uint8))


def test_xla_integer_semantics_at_the_edges():
    x = np.repeat(I32, 9)
    s = np.tile(np.array([-1, 0, 1, 5, 16, 31, 32, 33, 100], np.int32), len(I32))
    d = np.tile(np.array([-1, 1, -3, 7, -(1 << 31), 0, -2, 5, 9], np.int32), len(I32))  # 0: XLA's -1 and x
    want = jax.jit(_edges)(x, s, d)
    got = int_eval.run(jax.make_jaxpr(_edges)(x, s, d), x, s, d)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and np.array_equal(g, np.asarray(w)), i


TABLES = [(activations._logistic_values, activations.logistic_params((256,), 0.03, 7, 1 / 256, -128)),
          (activations._tanh_values, activations.tanh_params((256,), 0.05, -20, 1 / 128, 0)),
          (activations._hard_swish_values, activations.hard_swish_params((256,), 0.02, 5, 0.015, -40)),
          (activations._leaky_relu_values, activations.leaky_relu_params((256,), 0.04, -3, 0.03, 10, -0.3))]


@pytest.mark.parametrize("values, p", TABLES, ids=["logistic", "tanh", "hard_swish", "leaky_relu"])
def test_activation_tables_equal_jax_evaluation(values, p):
    x = np.arange(-128, 128, dtype=np.int32).astype(np.int8)
    (got,) = int_eval.run(jax.make_jaxpr(lambda v: values(v, p))(x), x)  # no fallback: NumPy's own
    assert np.array_equal(activations._table(values, p), got)
    with jax.ensure_compile_time_eval():
        want = np.asarray(values(jnp.arange(-128, 128, dtype=jnp.int32).astype(jnp.int8), p), np.int8)
    assert np.array_equal(got, want)
    assert len(np.unique(got)) > 10  # the arithmetic, not a saturated table


def test_an_unknown_primitive_or_a_float_is_refused():
    with pytest.raises(int_eval.Unsupported, match="cumsum"):
        int_eval.run(jax.make_jaxpr(jnp.cumsum)(I32), I32)
    f = np.array([3e9, np.nan, -2.5], np.float32)  # XLA saturates and maps NaN to 0: not NumPy's casts
    with pytest.raises(int_eval.Unsupported, match="convert_element_type"):
        int_eval.run(jax.make_jaxpr(lambda v: v.astype(jnp.int32))(f), f)
