"""Two-layer MLP 1x16 -> 32 (relu) -> 10; the weights are baked into flash."""
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(0)


def mlp(x, w1, b1, w2, b2):
    return jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2


mlp.example_inputs = {"x": rng.normal(size=(1, 16)).astype(np.float32)}
mlp.weights = {
    "w1": (rng.normal(size=(16, 32)) / 4).astype(np.float32),
    "b1": rng.normal(size=32).astype(np.float32) / 10,
    "w2": (rng.normal(size=(32, 10)) / 6).astype(np.float32),
    "b2": rng.normal(size=10).astype(np.float32) / 10,
}
