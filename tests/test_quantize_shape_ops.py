"""quantize() on jnp.pad, jnp.transpose and jnp.mean over any axes: TFLite's PAD (the zero point
in the padding), TRANSPOSE and MEAN (quant/params.MeanParams); close to the float model, the
refusals one line, and the int8 model in every variant on QEMU equal to its JAX values."""

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, model_namespace

from specializer.quant.graph import QuantizeError
from specializer.quant.ptq import quantize

# a model as a user writes one: conv, zero padding, a mean over the channels kept as a map, the
# per-row mean of the transposed map, and a global mean kept 4-D
MODEL = '''
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.quant.ptq import quantize

DN = ("NHWC", "HWIO", "NHWC")


def float_net(x, w, b):
    h = jax.nn.relu(lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=DN) + b)  # 1x7x6x5
    h = jnp.pad(h, ((0, 0), (1, 2), (0, 1), (0, 0)))                                          # 1x10x7x5
    t = jnp.transpose(h, (0, 3, 1, 2))                                                          # 1x5x10x7
    rows = jnp.mean(t, axis=-1)                                                                 # 1x5x10
    g = jnp.mean(h, axis=(1, 2), keepdims=True)                                                 # 1x1x1x5
    return rows, g


rng = np.random.default_rng(7)
W = {"w": (rng.standard_normal((3, 3, 3, 5)) * 0.4).astype(np.float32),
     "b": (rng.standard_normal(5) * 0.1).astype(np.float32)}
calibration = [{"x": rng.standard_normal((1, 9, 8, 3)).astype(np.float32)} for _ in range(12)]
shape_ops_int8, params = quantize(float_net, W, calibration, name="shape_ops_int8")
shape_ops_int8.example_inputs = {"x": shape_ops_int8.inputs["x"].quantize(calibration[0]["x"])}
shape_ops_int8.weights = params
'''


def quantized() -> dict:
    return model_namespace(MODEL, "shape_ops_int8.py")


def test_the_steps_and_close_to_float():
    ns = quantized()
    model, qp = ns["shape_ops_int8"], ns["params"]
    assert [s.kind for s in model.steps] == ["conv", "pad", "transpose", "mean", "mean"]
    pad, mean_rows, mean_g = model.steps[1], model.steps[3].block, model.steps[4].block
    assert pad.block == (((0, 0), (1, 2), (0, 1), (0, 0)), model.step_qparams[0].zero_point)
    assert (mean_rows.axes, mean_rows.keep_dims, mean_rows.output_dims) == ((3,), False, (1, 5, 10))
    assert (mean_g.axes, mean_g.keep_dims, mean_g.output_dims) == ((1, 2), True, (1, 1, 1, 5))
    rng = np.random.default_rng(8)
    for _ in range(4):
        x = rng.standard_normal((1, 9, 8, 3)).astype(np.float32)
        for got, ref, q in zip(model.run_float(qp, x=x), ns["float_net"](x, **ns["W"]), model.outputs):
            ref = np.asarray(ref)
            assert got.shape == ref.shape
            assert np.abs(got - ref).max() <= 3 * q.scale  # a couple of steps of the output's scale


def test_refusals_are_one_line():
    import jax.numpy as jnp
    from jax import lax

    x = [{"x": np.ones((1, 4, 4, 2), np.float32)}]
    with pytest.raises(QuantizeError, match="only padding with zeros"):
        quantize(lambda x: jnp.pad(x, 1, constant_values=1.0), {}, x)
    with pytest.raises(QuantizeError, match="negative or interior"):
        quantize(lambda x: lax.pad(x, 0.0, ((0, 0, 0), (0, 0, 1), (0, 0, 0), (0, 0, 0))), {}, x)


def test_in_every_variant_equal_to_jax(tmp_path):
    every_variant_passes(captured_source(MODEL, "shape_ops_int8", tmp_path).model_ll, tmp_path, exact=True)
