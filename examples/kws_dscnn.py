"""MLPerf Tiny keyword spotting DS-CNN: 49x10x1 MFCC input, conv 10x4 stride 2 -> 64, four
depthwise-separable blocks (3x3 depthwise + 1x1 pointwise, 64 channels), global average pool,
dense 12. Batch norm is folded into the biases, as a deployed model has it."""
import jax.numpy as jnp
import numpy as np
from jax import lax

rng = np.random.default_rng(3)
DN = ("NHWC", "HWIO", "NHWC")
C = 64


def _relu(x):
    return jnp.maximum(x, 0.0)


def kws_dscnn(x, w0, b0, dw1, db1, pw1, pb1, dw2, db2, pw2, pb2, dw3, db3, pw3, pb3,
              dw4, db4, pw4, pb4, fc, fcb):
    y = _relu(lax.conv_general_dilated(x, w0, (2, 2), "SAME", dimension_numbers=DN) + b0)  # 25x5x64
    for dw, db, pw, pb in ((dw1, db1, pw1, pb1), (dw2, db2, pw2, pb2), (dw3, db3, pw3, pb3),
                           (dw4, db4, pw4, pb4)):
        y = _relu(lax.conv_general_dilated(y, dw, (1, 1), "SAME", dimension_numbers=DN,
                                           feature_group_count=C) + db)
        y = _relu(lax.conv_general_dilated(y, pw, (1, 1), "VALID", dimension_numbers=DN) + pb)
    y = jnp.mean(y, axis=(1, 2))  # 1x64
    return y @ fc + fcb


def _w(*shape):
    fan_in = int(np.prod(shape[:-1]))
    return (rng.normal(size=shape) / np.sqrt(fan_in)).astype(np.float32)


def _b(n):
    return (rng.normal(size=n) / 10).astype(np.float32)


kws_dscnn.example_inputs = {"x": rng.normal(size=(1, 49, 10, 1)).astype(np.float32)}
kws_dscnn.weights = {"w0": _w(10, 4, 1, C), "b0": _b(C)}
for i in range(1, 5):
    kws_dscnn.weights.update({f"dw{i}": _w(3, 3, 1, C), f"db{i}": _b(C),
                              f"pw{i}": _w(1, 1, C, C), f"pb{i}": _b(C)})
kws_dscnn.weights.update({"fc": _w(C, 12), "fcb": _b(12)})
