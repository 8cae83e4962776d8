""".tflite -> a JAX function built from the project's int8 blocks (float ops for float models).

    model = read_tflite("kws_ref_model.tflite")
    y = model(*model.example_inputs)      # int8 in, int8 out, the file's own weights
    every = model.tensors(x)              # each operator's output, by tensor index
    model.fn                              # fn(x, w0, b0, ...) with .example_inputs and .weights:
                                          # the form capture's worker takes

The graph is read through the flatbuffer schema (tflite_file.py) and each operator becomes one
layer: int8 ops onto specializer.quant's blocks (tflite_int8.py), float ops onto plain JAX
(tflite_float.py). What the reader does not support is refused in one line naming the
operator, its index in the graph and the option, never approximated.
"""

from __future__ import annotations

import functools
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path

import jax
import numpy as np

from specializer.importers import tflite_float, tflite_int8
from specializer.importers.tflite_file import GraphRecord, OpRecord, Refused, TensorRecord, read_graph, with_outputs
from specializer.importers.tflite_layer import Layer, OpContext
from specializer.quant.ptq import QParams

# the example input: the zero point plus a small spread (int8), or N(0, 1) (float), at seed 0;
# uniform int8 noise saturates the MLPerf Tiny classifiers' softmax, this does not
EXAMPLE_SEED = 0
EXAMPLE_INT8_SPREAD = 4.0


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output: its tensor, shape, dtype and (int8) quantization."""
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str                       # "int8" or "float32"
    quant: QParams | None            # real = scale * (q - zero_point); None for float


@dataclass(frozen=True, eq=False)
class TfliteModel:
    path: Path
    name: str                        # a Python identifier made from the file name
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    layers: tuple[Layer, ...]
    weights: dict = field(repr=False)  # weight name -> array (w<op>, b<op>)
    example_inputs: tuple[np.ndarray, ...] = field(repr=False)  # one per input (example_input)
    file_outputs: tuple[int, ...] = ()  # the file's own output tensors (`outputs` may be every layer's)

    def file_bytes(self) -> bytes:
        """The file, its outputs made this model's (every layer's, with every_layer) for an
        interpreter to report them."""
        data = self.path.read_bytes()
        indices = tuple(o.index for o in self.outputs)
        return data if indices == self.file_outputs else with_outputs(data, indices)

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

    def tensors(self, *xs) -> dict[int, jax.Array]:
        """Every layer's output (and the inputs), by tensor index. Each layer is compiled on its
        own: XLA compiles a whole int8 model's multiply-add chains several times slower than the
        same layers one by one (ResNet-8: 40 s against 9 s)."""
        jitted = self._jitted
        return _evaluate(self, xs, self.weights, lambda layer: jitted[layer.op])

    @functools.cached_property
    def _jitted(self) -> dict:
        return {layer.op: jax.jit(layer.run) for layer in self.layers}


class GraphFunction:
    """The model as capture takes a model: called with its inputs, then its weights (by name or
    in signature order); `example_inputs` and `weights` hold the values capture runs it on."""

    def __init__(self, model: TfliteModel):
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


def _evaluate(m: TfliteModel, xs, weights, run=lambda layer: layer.run) -> dict:
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
    """The named scope the layer runs in (`layer<op index>.<OP>`), in the op_name of its HLO."""
    return f"layer{layer.op}.{layer.name}"


def build_layer(g: GraphRecord, op: OpRecord, weights: dict) -> Layer:
    """The layer for op, by its first input's type; its constants go into `weights`."""
    c = OpContext(g, op, weights)
    if len(op.outputs) != 1:
        raise c.refuse(f"{len(op.outputs)} outputs")
    x = c.tensor(0)
    if x is None or x.data is not None:
        raise c.refuse("its first input is a constant")
    ops = {"INT8": tflite_int8.OPS, "FLOAT32": tflite_float.OPS}.get(x.type)
    if ops is None:
        raise c.refuse(f"input type {x.type} (the reader takes INT8 and FLOAT32)")
    return ops[op.name](c, x)


def _spec(g: GraphRecord, t: TensorRecord, what: str) -> TensorSpec:
    if t.type not in ("INT8", "FLOAT32"):
        raise Refused(f"{g.path.name}: {what} tensor {t.index} ('{t.name}') is {t.type} "
                      "(the reader takes INT8 and FLOAT32)")
    quant = None
    if t.type == "INT8":
        if t.quant is None or len(t.quant.scales) != 1:
            raise Refused(f"{g.path.name}: {what} tensor {t.index} ('{t.name}') needs one scale and zero point")
        quant = QParams(t.quant.scales[0], t.quant.zero_points[0])
    return TensorSpec(t.index, t.name, t.shape, t.type.lower(), quant)


def example_input(spec: TensorSpec, k: int = 0, j: int = 0) -> np.ndarray:
    """Example j of the k-th input (deterministic)."""
    rng = np.random.default_rng(EXAMPLE_SEED + k + 1000 * j)
    if spec.quant is None:
        return rng.normal(size=spec.shape).astype(np.float32)
    spread = EXAMPLE_INT8_SPREAD * (4 if j % 2 else 1)
    x = spec.quant.zero_point + rng.normal(0.0, spread, spec.shape)
    return np.clip(np.round(x), -128, 127).astype(np.int8)


def _identifier(stem: str) -> str:
    name = re.sub(r"\W", "_", stem)
    return name if name[:1].isalpha() or name[:1] == "_" else f"m_{name}"


def read_tflite(path, every_layer: bool = False) -> TfliteModel:
    """Read a .tflite file into a TfliteModel (UserError, one line, for what is not supported).
    every_layer: the model's outputs are every operator's output, in graph order."""
    g = read_graph(Path(path))
    inputs = tuple(_spec(g, g.tensors[i], "input") for i in g.inputs)
    outputs = tuple(_spec(g, g.tensors[i], "output") for i in g.outputs)
    weights: dict[str, np.ndarray] = {}
    layers = tuple(build_layer(g, op, weights) for op in g.ops)
    known = {i.index for i in inputs}
    for layer in layers:  # operators run in file order (the schema's topological order)
        missing = [i for i in layer.inputs if i not in known]
        if missing:
            raise Refused(f"{g.path.name}: operator {layer.op} ({layer.name}) reads tensor {missing[0]} "
                          "before any operator writes it")
        known.add(layer.output)
    for o in outputs:
        if o.index not in known:
            raise Refused(f"{g.path.name}: output tensor {o.index} is written by no operator")
    file_outputs = tuple(o.index for o in outputs)
    if every_layer:
        outputs = tuple(_spec(g, g.tensors[layer.output], f"operator {layer.op}'s output") for layer in layers)
    examples = tuple(example_input(spec, k) for k, spec in enumerate(inputs))
    return TfliteModel(g.path, _identifier(g.path.stem), inputs, outputs, layers, weights, examples, file_outputs)
