"""MLPerf Tiny image classification ResNet-8 (CIFAR-10): 32x32x3 image input (NHWC), conv 3x3 -> 16,
then three residual stacks of two 3x3 convs each (16 channels at 32x32; 32 at 16x16 and 64 at 8x8,
each entered with stride 2 and a 1x1 stride-2 projection conv on the shortcut), add, relu; global
average pool, dense 10 (logits). Batch norm is folded into the biases, as a deployed model has it."""
import jax.numpy as jnp
import numpy as np
from jax import lax

rng = np.random.default_rng(5)
DN = ("NHWC", "HWIO", "NHWC")


def _relu(x):
    return jnp.maximum(x, 0.0)


def _conv(x, w, b, stride=1):
    return lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=DN) + b


def resnet8(x, w0, b0, w1a, b1a, w1b, b1b, w2a, b2a, w2b, b2b, w2s, b2s,
            w3a, b3a, w3b, b3b, w3s, b3s, fc, fcb):
    y = _relu(_conv(x, w0, b0))                                              # 32x32x16
    y = _relu(_conv(_relu(_conv(y, w1a, b1a)), w1b, b1b) + y)                # 32x32x16
    y = _relu(_conv(_relu(_conv(y, w2a, b2a, 2)), w2b, b2b) + _conv(y, w2s, b2s, 2))  # 16x16x32
    y = _relu(_conv(_relu(_conv(y, w3a, b3a, 2)), w3b, b3b) + _conv(y, w3s, b3s, 2))  # 8x8x64
    y = jnp.mean(y, axis=(1, 2))  # 1x64
    return y @ fc + fcb


def _w(*shape):
    fan_in = int(np.prod(shape[:-1]))
    return (rng.normal(size=shape) * np.sqrt(2 / fan_in)).astype(np.float32)


def _b(n):
    return (rng.normal(size=n) / 10).astype(np.float32)


resnet8.example_inputs = {"x": rng.uniform(0, 1, size=(1, 32, 32, 3)).astype(np.float32)}
resnet8.weights = {"w0": _w(3, 3, 3, 16), "b0": _b(16),
                   "w1a": _w(3, 3, 16, 16), "b1a": _b(16), "w1b": _w(3, 3, 16, 16), "b1b": _b(16)}
for i, (cin, cout) in ((2, (16, 32)), (3, (32, 64))):
    resnet8.weights.update({f"w{i}a": _w(3, 3, cin, cout), f"b{i}a": _b(cout),
                            f"w{i}b": _w(3, 3, cout, cout), f"b{i}b": _b(cout),
                            f"w{i}s": _w(1, 1, cin, cout), f"b{i}s": _b(cout)})
resnet8.weights.update({"fc": _w(64, 10), "fcb": _b(10)})
