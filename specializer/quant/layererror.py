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

import jax
import jax.numpy as jnp
import numpy as np

from specializer.quant.graph import evaluate, read


def float_values(model, float_inputs: dict) -> list[np.ndarray]:
    """The float model's output of every layer that is a step, in step order."""
    g = model.graph
    steps = [layer for layer in g.layers if layer.kind != "input"]

    def run(xs):
        env = evaluate(g, xs)
        return [layer.attrs["value"] if layer.kind == "const" else read(g, env, layer.out) for layer in steps]

    # one compiled program: op by op, JAX compiles each primitive of each layer on its own
    xs = [jnp.asarray(float_inputs[n], jnp.float32) for n in model.inputs]
    return [np.asarray(v, np.float32) for v in jax.jit(run)(xs)]


def int8_values(model, inputs: dict, params: dict) -> list[np.ndarray]:
    """The inputs, then every step's int8 (or int32) output (one compiled program, as above;
    inside blocks.values_only() it compiles in a fraction of the time)."""
    run = jax.jit(lambda xs, ps: model.values(**xs, **ps))
    return [np.asarray(v) for v in run({n: jnp.asarray(inputs[n]) for n in model.inputs}, dict(params))]


def step_tensors(model, vals: list[np.ndarray]) -> list[tuple[tuple[np.ndarray, ...], np.ndarray]]:
    """(activation inputs, output) of every step, from int8_values."""
    return [(tuple(vals[i] for i in s.ins), vals[len(model.inputs) + k]) for k, s in enumerate(model.steps)]


def snr(reference: np.ndarray, got: np.ndarray) -> float | None:
    """SNR in dB of `got` against `reference` (inf: equal; None: the reference is all zero)."""
    ref = np.asarray(reference, np.float64).reshape(-1)
    err = ref - np.asarray(got, np.float64).reshape(-1)
    signal, noise = float(np.sum(ref * ref)), float(np.sum(err * err))
    if signal == 0.0:
        return None
    return math.inf if noise == 0.0 else 10.0 * math.log10(signal / noise)


def snr_db(model, inputs: dict, vals: list[np.ndarray]) -> list[float | None]:
    """Per step of a quantize() model: its output's SNR (dB, rounded to 0.01) against the float
    model's same layer on `inputs` (int8, the model's; `vals` the int8 model's int8_values on
    them), None where it cannot be told (no float graph kept, an all-zero float output, an equal
    one: infinite)."""
    if getattr(model, "graph", None) is None or len(model.step_qparams) != len(model.steps):
        return [None] * len(model.steps)
    floats = float_values(model, {n: model.inputs[n].dequantize(inputs[n]) for n in model.inputs})
    ints = vals[len(model.inputs):]
    out = []
    for f, q, qp in zip(floats, ints, model.step_qparams):
        s = snr(f, qp.dequantize(q).reshape(f.shape)) if f.size == q.size else None
        out.append(None if s is None or math.isinf(s) else round(s, 2))
    return out
