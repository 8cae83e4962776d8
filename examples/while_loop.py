"""A lax.fori_loop whose state is big enough that XLA keeps a real while loop (not one kernel)."""
import jax
import jax.numpy as jnp
import numpy as np


def while_loop(x):
    return jax.lax.fori_loop(0, 3, lambda i, v: v * 0.75 + jnp.sin(v), x)


while_loop.example_inputs = {"x": np.linspace(-3, 3, 4096, dtype=np.float32)}
