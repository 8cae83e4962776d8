"""The roots of a*x^2 + b*x + c on scalars (the seed model)."""
import jax.numpy as jnp
import numpy as np


def quadratic(a, b, c):
    d = jnp.sqrt(b * b - 4 * a * c)
    return (-b + d) / (2 * a), (-b - d) / (2 * a)


quadratic.example_inputs = {"a": np.float32(1.0), "b": np.float32(-3.0), "c": np.float32(2.0)}
