"""The MLP 1x256 -> 512 (relu) -> 10 of mlp256.py with 80% of each weight matrix magnitude-pruned
to zero (unstructured, per matrix), as a pruned deployment has it. The all-args build re-lays the
pruned weights out as compressed sparse columns; the other variants run the dense kernels."""
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(1)
SPARSITY = 0.8


def mlp256_pruned(x, w1, b1, w2, b2):
    return jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2


def _prune(w):
    cut = np.quantile(np.abs(w), SPARSITY)
    return np.where(np.abs(w) > cut, w, 0.0).astype(np.float32)


mlp256_pruned.example_inputs = {"x": rng.normal(size=(1, 256)).astype(np.float32)}
mlp256_pruned.weights = {
    "w1": _prune(rng.normal(size=(256, 512)) / 16),
    "b1": (rng.normal(size=512) / 10).astype(np.float32),
    "w2": _prune(rng.normal(size=(512, 10)) / 22),
    "b2": (rng.normal(size=10) / 10).astype(np.float32),
}
