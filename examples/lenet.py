"""LeNet-5-style CNN on 28x28x1 (NHWC): conv 5x5->6, max pool, conv 5x5->16, max pool, dense 120, 84, 10."""
import jax.numpy as jnp
import numpy as np
from jax import lax

rng = np.random.default_rng(2)
DN = ("NHWC", "HWIO", "NHWC")


def _conv(x, w, b):
    return jnp.maximum(lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=DN) + b, 0.0)


def _pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def lenet(x, c1, cb1, c2, cb2, d1, db1, d2, db2, d3, db3):
    y = _pool(_conv(x, c1, cb1))          # 1x12x12x6
    y = _pool(_conv(y, c2, cb2))          # 1x4x4x16
    y = y.reshape(1, -1)
    y = jnp.maximum(y @ d1 + db1, 0.0)
    y = jnp.maximum(y @ d2 + db2, 0.0)
    return y @ d3 + db3


def _w(*shape):
    fan_in = int(np.prod(shape[:-1]))
    return (rng.normal(size=shape) / np.sqrt(fan_in)).astype(np.float32)


def _b(n):
    return (rng.normal(size=n) / 10).astype(np.float32)


lenet.example_inputs = {"x": rng.uniform(0, 1, size=(1, 28, 28, 1)).astype(np.float32)}
lenet.weights = {"c1": _w(5, 5, 1, 6), "cb1": _b(6), "c2": _w(5, 5, 6, 16), "cb2": _b(16),
                 "d1": _w(256, 120), "db1": _b(120), "d2": _w(120, 84), "db2": _b(84),
                 "d3": _w(84, 10), "db3": _b(10)}
