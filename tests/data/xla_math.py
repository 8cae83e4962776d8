"""Every float32 math op XLA:CPU emits as a call (xla.F.f32, libm), over one fixed input array:
domain samples and the edges (0, -0, +-inf, NaN, denormals, the largest and smallest floats).
tests/test_xla_math.py runs it once on QEMU and measures each output's ulp error."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def inputs() -> np.ndarray:
    f32 = np.finfo(np.float32)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, f32.max, -f32.max, f32.tiny, -f32.tiny,
             f32.smallest_subnormal, -f32.smallest_subnormal, 3e-39, -3e-39, 1e-20, 88.7, -87.3, 89.0, -104.0,
             1e-4, 0.999, -0.999, 1.001, 9.0, -9.0, 20.0, 1e4, 1e30, np.pi / 2, np.pi, 3 * np.pi / 4]
    mags = np.geomspace(1e-38, 1e38, 96)
    lin = np.linspace(-12, 12, 129)
    unit = np.linspace(-1, 1, 65)
    x = np.concatenate([edges, mags, -mags, lin, unit]).astype(np.float32)
    return x


def _second(x):  # a second operand for atan2 and pow: the inputs in another order
    return jnp.roll(x, 37)


FUNCTIONS = {
    "exp": jnp.exp, "expm1": jnp.expm1, "exp2": jnp.exp2, "log": jnp.log, "log1p": jnp.log1p, "log2": jnp.log2,
    "log10": jnp.log10, "sqrt": jnp.sqrt, "rsqrt": lax.rsqrt, "cbrt": jnp.cbrt, "sin": jnp.sin, "cos": jnp.cos,
    "tan": jnp.tan, "asin": jnp.arcsin, "acos": jnp.arccos, "atan": jnp.arctan,
    "atan2": lambda x: jnp.arctan2(x, _second(x)), "sinh": jnp.sinh, "cosh": jnp.cosh, "tanh": jnp.tanh,
    "asinh": jnp.arcsinh, "acosh": jnp.arccosh, "atanh": jnp.arctanh, "erf": lax.erf, "erfc": lax.erfc,
    "erf_inv": lax.erf_inv, "logistic": jax.nn.sigmoid, "pow": lambda x: jnp.power(x, _second(x)),
    "round": jnp.round, "floor": jnp.floor, "ceil": jnp.ceil, "fmod": lambda x: jnp.fmod(x, _second(x)),
}


def xla_math(x):
    return tuple(f(x) for f in FUNCTIONS.values()) + (x.astype(jnp.bfloat16),)


xla_math.example_inputs = {"x": inputs()}
xla_math.weights = {}
