"""MLPerf Tiny visual wake words MobileNetV1, width multiplier 0.25: 96x96x3 image input (NHWC),
conv 3x3 stride 2 -> 8 (48x48), the 13 depthwise-separable blocks of MobileNetV1 (3x3 depthwise
with strides 1,2,1,2,1,2,1,1,1,1,1,2,1 + 1x1 pointwise to 16,32,32,64,64,128,128,128,128,128,128,
256,256 channels; 3x3x256 at the end), relu after each conv, global average pool, dense 2 (logits).
Padding "SAME" as the reference model. Batch norm is folded into the biases, as a deployed model
has it."""
import jax.numpy as jnp
import numpy as np
from jax import lax

rng = np.random.default_rng(6)
DN = ("NHWC", "HWIO", "NHWC")
STRIDES = (1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1)
CHANNELS = (16, 32, 32, 64, 64, 128, 128, 128, 128, 128, 128, 256, 256)


def _relu(x):
    return jnp.maximum(x, 0.0)


def mobilenet_vww(x, w0, b0,
                  dw1, db1, pw1, pb1, dw2, db2, pw2, pb2, dw3, db3, pw3, pb3,
                  dw4, db4, pw4, pb4, dw5, db5, pw5, pb5, dw6, db6, pw6, pb6,
                  dw7, db7, pw7, pb7, dw8, db8, pw8, pb8, dw9, db9, pw9, pb9,
                  dw10, db10, pw10, pb10, dw11, db11, pw11, pb11, dw12, db12, pw12, pb12,
                  dw13, db13, pw13, pb13, fc, fcb):
    p = locals()
    y = _relu(lax.conv_general_dilated(x, w0, (2, 2), "SAME", dimension_numbers=DN) + b0)  # 48x48x8
    for i, s in enumerate(STRIDES, 1):
        y = _relu(lax.conv_general_dilated(y, p[f"dw{i}"], (s, s), "SAME", dimension_numbers=DN,
                                           feature_group_count=y.shape[-1]) + p[f"db{i}"])
        y = _relu(lax.conv_general_dilated(y, p[f"pw{i}"], (1, 1), "SAME", dimension_numbers=DN)
                  + p[f"pb{i}"])
    y = jnp.mean(y, axis=(1, 2))  # 1x256
    return y @ fc + fcb


def _w(*shape):
    fan_in = int(np.prod(shape[:-1]))
    return (rng.normal(size=shape) * np.sqrt(2 / fan_in)).astype(np.float32)


def _b(n):
    return (rng.normal(size=n) / 10).astype(np.float32)


mobilenet_vww.example_inputs = {"x": rng.uniform(0, 1, size=(1, 96, 96, 3)).astype(np.float32)}
mobilenet_vww.weights = {"w0": _w(3, 3, 3, 8), "b0": _b(8)}
_cin = 8
for _i, _cout in enumerate(CHANNELS, 1):
    mobilenet_vww.weights.update({f"dw{_i}": _w(3, 3, 1, _cin), f"db{_i}": _b(_cin),
                                  f"pw{_i}": _w(1, 1, _cin, _cout), f"pb{_i}": _b(_cout)})
    _cin = _cout
mobilenet_vww.weights.update({"fc": _w(_cin, 2), "fcb": _b(2)})
