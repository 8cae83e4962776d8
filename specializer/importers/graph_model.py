"""What every importer's model has in common: its inputs and outputs, one layer per operator,
the file's weights, a deterministic example input, and `fn(x, w0, b0, ...)`, the form capture's
worker takes. The .tflite and .onnx readers build these from their own graphs; values are keyed
by whatever the format names them with (a tensor index, a value name)."""

from __future__ import annotations

import functools
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Hashable

import jax
import numpy as np

from specializer.quant.ptq import QParams

# the example input: the zero point plus a small spread (int8), or N(0, 1) (float), at seed 0;
# uniform int8 noise saturates the MLPerf Tiny classifiers' softmax, this does not
EXAMPLE_SEED = 0
EXAMPLE_INT8_SPREAD = 4.0


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output: its tensor, shape, dtype and (int8) quantization."""
    index: Hashable                  # the value's key in the graph (a .tflite tensor index, an ONNX value)
    name: str
    shape: tuple[int, ...]
    dtype: str                       # "int8", "int16" (16x8 files) or "float32"
    quant: QParams | None            # real = scale * (q - zero_point); None for float


@dataclass(frozen=True, eq=False)
class Layer:
    """One operator of the graph: run(*activations, *weights) -> its output tensor."""
    op: int                         # its position in the graph (unique)
    name: str                       # CONV_2D, Conv 'conv1', ...
    inputs: tuple                   # activation keys
    output: Hashable                # output key
    weights: tuple[str, ...]        # names of the constant arrays it takes, in order
    block: object | None            # the int8 block's parameters (None: float op or reshape)
    run: Callable


@dataclass(frozen=True, eq=False)
class ImportedModel:
    path: Path
    name: str                        # a Python identifier made from the file name
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    layers: tuple[Layer, ...]
    weights: dict = field(repr=False)  # weight name -> array (w<op>, b<op>)
    example_inputs: tuple[np.ndarray, ...] = field(repr=False)  # one per input (example_input)
    # where each key's array comes from in the file, for a reader that keeps it (ONNX: key ->
    # (value name, layout, quantization)); empty for .tflite, whose keys are the file's tensors
    sources: dict = field(default_factory=dict, repr=False)
    file_outputs: tuple = ()  # the file's own outputs' keys (`outputs` may be every layer's)

    def examples(self, n: int) -> list[tuple[np.ndarray, ...]]:
        """n deterministic example inputs, the first `example_inputs`; int8 ones alternate a
        spread of 4 and 16 around the zero point."""
        return [tuple(example_input(spec, k, j) for k, spec in enumerate(self.inputs)) for j in range(n)]

    @property
    def input_names(self) -> tuple[str, ...]:
        return ("x",) if len(self.inputs) == 1 else tuple(f"x{i}" for i in range(len(self.inputs)))

    @functools.cached_property
    def fn(self) -> "GraphFunction":
        return GraphFunction(self)

    def __call__(self, *xs):
        """The outputs for inputs xs, with the file's weights."""
        return self.fn(*xs, **self.weights)

    def tensors(self, *xs) -> dict:
        """Every layer's output (and the inputs), by key. Each layer is compiled on its own: XLA
        compiles a whole int8 model's multiply-add chains several times slower than the same
        layers one by one (ResNet-8: 40 s against 9 s)."""
        jitted = self._jitted
        return _evaluate(self, xs, self.weights, lambda layer: jitted[layer.op])

    @functools.cached_property
    def _jitted(self) -> dict:
        return {layer.op: jax.jit(layer.run) for layer in self.layers}


class GraphFunction:
    """The model as capture takes a model: called with its inputs, then its weights (by name or
    in signature order); `example_inputs` and `weights` hold the values capture runs it on."""

    def __init__(self, model: ImportedModel):
        self.model = model
        self.__name__ = self.__qualname__ = model.name
        names = list(model.input_names) + list(model.weights)
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
        self.example_inputs = dict(zip(model.input_names, model.example_inputs))
        self.weights = dict(model.weights)

    def __call__(self, *args, **kwargs):
        bound = self.__signature__.bind(*args, **kwargs).arguments
        m = self.model
        env = _evaluate(m, [bound[n] for n in m.input_names], {n: bound[n] for n in m.weights})
        outs = tuple(env[o.index] for o in m.outputs)
        return outs[0] if len(outs) == 1 else outs


def _evaluate(m: ImportedModel, xs, weights, run=lambda layer: layer.run) -> dict:
    if len(xs) != len(m.inputs):
        raise TypeError(f"{m.name} takes {len(m.inputs)} input(s), got {len(xs)}")
    env = {}
    for spec, x in zip(m.inputs, xs):
        if tuple(np.shape(x)) != spec.shape or np.dtype(getattr(x, "dtype", None)) != np.dtype(spec.dtype):
            raise TypeError(f"{m.name}: input '{spec.name}' must be {spec.dtype}{list(spec.shape)}, got "
                            f"{getattr(x, 'dtype', type(x).__name__)}{list(np.shape(x))}")
        env[spec.index] = x
    for layer in m.layers:
        with jax.named_scope(scope(layer)):  # in every HLO op_name of the layer: the profile's key
            env[layer.output] = run(layer)(*[env[i] for i in layer.inputs], *[weights[n] for n in layer.weights])
    return env


def scope(layer: Layer) -> str:
    """The named scope the layer runs in (`layer<op index>.<OP>`: the op's name up to its first
    space, ONNX's `Conv 'conv1'` as `Conv`), in the op_name of its HLO."""
    return f"layer{layer.op}." + re.sub(r"\W", "_", layer.name.split(" ")[0])


def example_input(spec: TensorSpec, k: int = 0, j: int = 0) -> np.ndarray:
    """Example j of the k-th input (deterministic)."""
    rng = np.random.default_rng(EXAMPLE_SEED + k + 1000 * j)
    if spec.quant is None:
        return rng.normal(size=spec.shape).astype(np.float32)
    spread = EXAMPLE_INT8_SPREAD * (4 if j % 2 else 1)
    if spec.dtype == "int16":  # the same spread in real terms: int16 steps are 256 times finer
        x = spec.quant.zero_point + rng.normal(0.0, spread * 256, spec.shape)
        return np.clip(np.round(x), -32768, 32767).astype(np.int16)
    x = spec.quant.zero_point + rng.normal(0.0, spread, spec.shape)
    return np.clip(np.round(x), -128, 127).astype(np.int8)


def identifier(stem: str) -> str:
    """A Python identifier made from a file name's stem."""
    name = re.sub(r"\W", "_", stem)
    return name if name[:1].isalpha() or name[:1] == "_" else f"m_{name}"
