"""Per-layer quantization error of a quantize() model: each int8 block's output, dequantized,
against the float model's same layer, as a signal-to-noise ratio in dB.

quantize() keeps the float model's layer graph (QuantizedModel.graph; its non-input layers are
the steps, in order) and each step's output quantization (step_qparams), so both programs can
be run side by side on one input: the int8 model on the int8 input, the float model on that
input dequantized (what the int8 model's input means). The error of a layer therefore includes
what the layers before it passed on, as a deployed model's would.

    SNR = 10 log10( sum(float^2) / sum((float - dequantized int8)^2) )
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from specializer.quant.graph import evaluate, read


def float_values(model, float_inputs: dict) -> list[np.ndarray]:
    """The float model's output of every layer that is a step, in step order."""
    g = model.graph
    env = evaluate(g, [jnp.asarray(float_inputs[n], jnp.float32) for n in model.inputs])
    steps = [layer for layer in g.layers if layer.kind != "input"]
    return [np.asarray(read(g, env, layer.out), np.float32) for layer in steps]


def int8_values(model, inputs: dict, params: dict) -> list[np.ndarray]:
    """The inputs, then every step's int8 (or int32) output."""
    return [np.asarray(v) for v in model.values(**{n: jnp.asarray(inputs[n]) for n in model.inputs}, **params)]


def step_tensors(model, inputs: dict, params: dict) -> list[tuple[tuple[np.ndarray, ...], np.ndarray]]:
    """(activation inputs, output) of every step."""
    vals = int8_values(model, inputs, params)
    return [(tuple(vals[i] for i in s.ins), vals[len(model.inputs) + k]) for k, s in enumerate(model.steps)]


def snr(reference: np.ndarray, got: np.ndarray) -> float | None:
    """SNR in dB of `got` against `reference` (inf: equal; None: the reference is all zero)."""
    ref = np.asarray(reference, np.float64).reshape(-1)
    err = ref - np.asarray(got, np.float64).reshape(-1)
    signal, noise = float(np.sum(ref * ref)), float(np.sum(err * err))
    if signal == 0.0:
        return None
    return math.inf if noise == 0.0 else 10.0 * math.log10(signal / noise)


def snr_db(model, inputs: dict, params: dict) -> list[float | None]:
    """Per step of a quantize() model: its output's SNR (dB, rounded to 0.01) against the float
    model's same layer on `inputs` (int8, the model's), None where it cannot be told (no float
    graph kept, an all-zero float output, an equal one: infinite)."""
    if getattr(model, "graph", None) is None or len(model.step_qparams) != len(model.steps):
        return [None] * len(model.steps)
    floats = float_values(model, {n: model.inputs[n].dequantize(inputs[n]) for n in model.inputs})
    ints = int8_values(model, inputs, params)[len(model.inputs):]
    out = []
    for f, q, qp in zip(floats, ints, model.step_qparams):
        s = snr(f, qp.dequantize(q).reshape(f.shape)) if f.size == q.size else None
        out.append(None if s is None or math.isinf(s) else round(s, 2))
    return out
