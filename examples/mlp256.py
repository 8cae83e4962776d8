"""MLP 1x256 -> 512 (relu) -> 10; both dots are left by XLA to the runtime, so they go to libjit."""
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(1)


def mlp256(x, w1, b1, w2, b2):
    return jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2


mlp256.example_inputs = {"x": rng.normal(size=(1, 256)).astype(np.float32)}
mlp256.weights = {
    "w1": (rng.normal(size=(256, 512)) / 16).astype(np.float32),
    "b1": (rng.normal(size=512) / 10).astype(np.float32),
    "w2": (rng.normal(size=(512, 10)) / 22).astype(np.float32),
    "b2": (rng.normal(size=10) / 10).astype(np.float32),
}
