"""MLPerf Tiny anomaly-detection autoencoder: 640 -> 128 x4 -> 8 -> 128 x4 -> 640 (dense + relu;
batch norm folded into the biases)."""
import jax.numpy as jnp
import numpy as np

rng = np.random.default_rng(4)
SIZES = [640, 128, 128, 128, 128, 8, 128, 128, 128, 128, 640]


def anomaly_ae(x, w0, b0, w1, b1, w2, b2, w3, b3, w4, b4, w5, b5, w6, b6, w7, b7, w8, b8, w9, b9):
    ws = (w0, w1, w2, w3, w4, w5, w6, w7, w8, w9)
    bs = (b0, b1, b2, b3, b4, b5, b6, b7, b8, b9)
    y = x
    for i, (w, b) in enumerate(zip(ws, bs)):
        y = y @ w + b
        if i < len(ws) - 1:
            y = jnp.maximum(y, 0.0)
    return y


anomaly_ae.example_inputs = {"x": rng.normal(size=(1, 640)).astype(np.float32)}
anomaly_ae.weights = {}
for i, (a, b) in enumerate(zip(SIZES, SIZES[1:])):
    anomaly_ae.weights[f"w{i}"] = (rng.normal(size=(a, b)) / np.sqrt(a)).astype(np.float32)
    anomaly_ae.weights[f"b{i}"] = (rng.normal(size=b) / 10).astype(np.float32)
