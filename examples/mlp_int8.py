"""Quantized MLP 1x256 -> 64 (relu) -> 10 in int8: int8 inputs and weights, int32 accumulation
(preferred_element_type), int32 bias, requantized to int8 with a per-layer scale and zero point.
Weights are stored [out][in] (TFLite's fully-connected layout), the form CMSIS-NN's s8 kernels take."""
import jax.numpy as jnp
import numpy as np
from jax import lax

rng = np.random.default_rng(5)
FC = (((1,), (1,)), ((), ()))  # contract x's dim 1 with w's dim 1: w is [out][in]


def _requant(acc, scale, zero_point, lo):
    y = jnp.round(acc.astype(jnp.float32) * scale) + zero_point
    return jnp.clip(y, lo, 127).astype(jnp.int8)


def mlp_int8(x, w1, b1, w2, b2):
    a1 = lax.dot_general(x, w1, FC, preferred_element_type=jnp.int32) + b1
    h = _requant(a1, np.float32(1 / 512), -128, -128)  # relu folded into the clamp at the zero point
    # layer 2 takes h as stored; its input zero point is folded into b2, as TFLite converters do
    a2 = lax.dot_general(h, w2, FC, preferred_element_type=jnp.int32) + b2
    return _requant(a2, np.float32(1 / 256), 0, -128)


mlp_int8.example_inputs = {"x": rng.integers(-128, 128, size=(1, 256), dtype=np.int8)}
mlp_int8.weights = {
    "w1": rng.integers(-127, 128, size=(64, 256), dtype=np.int8),
    "b1": rng.integers(-2000, 2000, size=64, dtype=np.int32),
    "w2": rng.integers(-127, 128, size=(10, 64), dtype=np.int8),
    "b2": rng.integers(-500, 500, size=10, dtype=np.int32),
}
