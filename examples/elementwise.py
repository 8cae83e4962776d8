"""exp, tanh, log, sqrt and erf of a vector of 256."""
import jax.numpy as jnp
import jax.scipy.special
import numpy as np


def elementwise(x):
    return jnp.exp(x), jnp.tanh(x), jnp.log(x), jnp.sqrt(x), jax.scipy.special.erf(x)


elementwise.example_inputs = {"x": np.linspace(0.05, 4.0, 256, dtype=np.float32)}
