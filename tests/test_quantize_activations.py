"""quantize() on jax.nn.sigmoid, jnp.tanh, jax.nn.leaky_relu and jax.nn.hard_swish: TFLite's int8
LOGISTIC, TANH, LEAKY_RELU and HARD_SWISH (quant/activations.py); close to the float model, a
pattern with an intermediate read elsewhere is not taken for the activation, and the int8 model
runs in every variant on QEMU equal to its JAX values."""

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

DN = ("NHWC", "HWIO", "NHWC")


def float_net(x, w, b, fc):
    h = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN) + b   # 1x4x4x4
    a = jax.nn.leaky_relu(h, 0.1)
    s = jax.nn.hard_swish(a)
    gate = jax.nn.sigmoid(s.reshape(1, -1) @ fc)                                   # 1x3
    return gate, jnp.tanh(s)


rng = np.random.default_rng(3)
W = {"w": (rng.standard_normal((3, 3, 2, 4)) * 0.5).astype(np.float32),
     "b": (rng.standard_normal(4) * 0.1).astype(np.float32),
     "fc": (rng.standard_normal((64, 3)) * 0.1).astype(np.float32)}
calibration = [{"x": rng.standard_normal((1, 4, 4, 2)).astype(np.float32)} for _ in range(12)]
acts_int8, params = quantize(float_net, W, calibration, name="acts_int8")
acts_int8.example_inputs = {"x": acts_int8.inputs["x"].quantize(calibration[0]["x"])}
acts_int8.weights = params
'''


def quantized() -> dict:
    return model_namespace(MODEL, "acts_int8.py")


def test_the_steps_and_close_to_float():
    ns = quantized()
    model, qp = ns["acts_int8"], ns["params"]
    assert [s.kind for s in model.steps] == ["conv", "leaky_relu", "hard_swish", "reshape", "dense", "logistic",
                                            "tanh"]
    assert [(q.scale, q.zero_point) for q in model.outputs] == [(1 / 256, -128), (1 / 128, 0)]  # TFLite's
    rng = np.random.default_rng(4)
    for _ in range(4):
        x = rng.standard_normal((1, 4, 4, 2)).astype(np.float32)
        for got, ref, q in zip(model.run_float(qp, x=x), ns["float_net"](x, **ns["W"]), model.outputs):
            ref = np.asarray(ref)
            assert got.shape == ref.shape
            assert np.abs(got - ref).max() <= 6 * q.scale  # a few steps through four int8 layers


def test_a_pattern_whose_inside_is_read_elsewhere_is_not_an_activation():
    import jax.numpy as jnp

    def f(x):  # leaky relu written out, but its alpha * x is returned too: no LEAKY_RELU block for it
        neg = 0.2 * x  # (a product with a constant, a MUL of its own)
        return jnp.where(x >= 0, x, neg), neg

    with pytest.raises(QuantizeError, match="unsupported op 'ge'"):  # the pattern's comparison, alone
        quantize(f, {}, [{"x": np.ones((2, 3), np.float32)}])


def test_in_every_variant_equal_to_jax(tmp_path):
    every_variant_passes(captured_source(MODEL, "acts_int8", tmp_path).model_ll, tmp_path, exact=True)
