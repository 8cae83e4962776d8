"""How far a quantize(activation_bits=16) model is from its float function, against how far the
int8 scheme is: both measured against the float function with its weights on the int8 grid (what
int8 weights allow), so the difference is the activations'."""

import jax
import numpy as np

from specializer.quant.ptq import quantize


def on_grid(w, per_channel: bool = False):
    """w rounded to symmetric int8 steps of max |w| / 127, per output channel (the last axis) or
    per tensor (quantize()'s dense weights)."""
    amax = np.abs(w).reshape(-1, w.shape[-1]).max(axis=0) if per_channel else np.abs(w).max()
    return (np.clip(np.round(w / (amax / 127)), -127, 127) * (amax / 127)).astype(np.float32)


def errors_16_and_8(fn, weights: dict, calibration: list, model16, params16, gridded,
                    scale: float = 1.0) -> tuple[float, float]:
    """(max |error| of model16, of fn quantized with activation_bits=8) over the calibration inputs
    times `scale` (below 1: away from the calibrated ranges' edges, which the gridded weights can
    pass); `gridded`: the weight names put on the int8 grid for the reference."""
    grid = dict(weights, **{k: on_grid(weights[k]) for k in gridded})
    xs = [c["x"] * np.float32(scale) for c in calibration]
    net = jax.jit(fn)
    ref = np.stack([np.asarray(net(x, **grid)) for x in xs])
    q8, p8 = quantize(fn, weights, calibration, activation_bits=8)
    err16 = np.abs(np.stack([model16.run_float(params16, x=x) for x in xs]) - ref).max()
    err8 = np.abs(np.stack([q8.run_float(p8, x=x) for x in xs]) - ref).max()
    return float(err16), float(err8)
