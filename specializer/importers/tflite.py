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

from pathlib import Path

import numpy as np

from specializer.importers import tflite_float, tflite_int8, tflite_int8_activations, tflite_int8_recurrent
from specializer.importers.graph_model import (EXAMPLE_INT8_SPREAD, EXAMPLE_SEED, GraphFunction,  # noqa: F401
                                               ImportedModel, Layer, TensorSpec, example_input, identifier,
                                               scope)
from specializer.importers.tflite_file import GraphRecord, OpRecord, Refused, TensorRecord, read_graph, with_outputs
from specializer.importers.tflite_layer import OpContext
from specializer.quant.ptq import QParams

TfliteModel = ImportedModel  # the generic model (graph_model.py), keyed by tensor index



# the input an op computes on, where it is not the first (TRANSPOSE_CONV: output shape, filter, input)
DATA_INPUT = {"TRANSPOSE_CONV": 2}


def build_layer(g: GraphRecord, op: OpRecord, weights: dict) -> Layer:
    """The layer for op, by its first input's type; its constants go into `weights`."""
    c = OpContext(g, op, weights)
    if len(op.outputs) != 1:
        raise c.refuse(f"{len(op.outputs)} outputs")
    x = c.tensor(DATA_INPUT.get(op.name, 0))
    if x is None or x.data is not None:
        raise c.refuse("its data input is a constant")
    int8_ops = {**tflite_int8.OPS, **tflite_int8_activations.OPS, **tflite_int8_recurrent.OPS}
    int16_ops = {**tflite_int8.OPS_16X8, **tflite_int8_activations.OPS_16X8}
    ops = {"INT8": int8_ops, "INT16": int16_ops, "FLOAT32": tflite_float.OPS}.get(x.type)
    if ops is None:
        raise c.refuse(f"input type {x.type} (the reader takes INT8, INT16 (16x8) and FLOAT32)")
    if op.name not in ops:
        raise c.refuse(f"not supported with {x.type} data")
    try:
        return ops[op.name](c, x)
    except ValueError as e:  # a block's parameters out of what its kernel takes (quant/params.py)
        raise c.refuse(str(e)) from None


def _spec(g: GraphRecord, t: TensorRecord, what: str) -> TensorSpec:
    if t.type not in ("INT8", "INT16", "FLOAT32"):
        raise Refused(f"{g.path.name}: {what} tensor {t.index} ('{t.name}') is {t.type} "
                      "(the reader takes INT8, INT16 (16x8) and FLOAT32)")
    quant = None
    if t.type in ("INT8", "INT16"):
        if t.quant is None or len(t.quant.scales) != 1:
            raise Refused(f"{g.path.name}: {what} tensor {t.index} ('{t.name}') needs one scale and zero point")
        quant = QParams(t.quant.scales[0], t.quant.zero_points[0], 16 if t.type == "INT16" else 8)
    return TensorSpec(t.index, t.name, t.shape, t.type.lower(), quant)


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
    return TfliteModel(g.path, identifier(g.path.stem), inputs, outputs, layers, weights, examples,
                       file_outputs=file_outputs)


def tflite_bytes(model: TfliteModel) -> bytes:
    """The file, its outputs made the model's (every layer's, with every_layer), for TFLite
    Micro's interpreter to report them."""
    data = model.path.read_bytes()
    keys = tuple(o.index for o in model.outputs)
    return data if keys == model.file_outputs else with_outputs(data, keys)
