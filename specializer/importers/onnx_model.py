""".onnx -> a JAX function: float ops as plain JAX, QDQ int8 ops onto specializer.quant's blocks.

    model = read_onnx("model.onnx")
    y = model(*model.example_inputs)      # the file's own inputs and outputs (dtype and layout)
    every = model.tensors(x)              # each layer's output, by value name
    model.fn                              # fn(x, w0, b0, ...) with .example_inputs and .weights:
                                          # the form capture's worker takes

The file is loaded, checked and its shapes inferred by the `onnx` package (onnx_file.py); each
node becomes a layer (or none: a Transpose, Identity, Dropout, a DequantizeLinear of an int8
value, a BatchNormalization folded into its Conv). Inside, the function works in NHWC
(onnx_layer.py); the model's inputs and outputs keep the file's layout. QDQ int8: a
DequantizeLinear -> op -> QuantizeLinear group becomes one int8 block (onnx_int8.py). What the
reader does not support is refused in one line naming the node, its index and the option.

(Not named onnx.py: inside specializer.importers that would shadow the `onnx` package.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specializer.importers import onnx_float, onnx_int8, onnx_movement
from specializer.importers.graph_model import ImportedModel, TensorSpec, example_input, identifier
from specializer.importers.onnx_file import OnnxGraph, Refused, read_graph
from specializer.importers.onnx_layer import Builder, NodeContext, Val, identity
from specializer.quant.ptq import QParams

OnnxModel = ImportedModel  # keyed by value name

OPS = {**onnx_float.OPS, **onnx_movement.OPS}  # by op type; onnx_int8.OPS first for a QDQ group
SUPPORTED = sorted(set(OPS) | set(onnx_int8.QDQ))


def _input(g: OnnxGraph, name: str) -> Val:
    r = g.values.get(name)
    if r is None or r.shape is None:
        raise Refused(f"{g.path.name}: input '{name}' has no static shape")
    if r.dtype == "float32":
        return Val(name, r.shape, "float32", identity(len(r.shape)))
    if r.dtype == "int8":  # its quantization is the DequantizeLinear's that reads it
        users = g.consumers(name)
        if not users or any(u.op != "DequantizeLinear" for u in users):
            raise Refused(f"{g.path.name}: int8 input '{name}' is read by another node than DequantizeLinear")
        return Val(name, r.shape, "int8", identity(len(r.shape)))
    raise Refused(f"{g.path.name}: input '{name}' is {r.dtype} (the reader takes float32, and int8 read by "
                  "DequantizeLinear)")


# computed at read time when every input is a constant (onnx.reference runs the node): the
# shape and layout ops exporters leave on weights (a Transpose of a MatMul's weight, ...)
FOLDABLE = {"Transpose", "Reshape", "Flatten", "Identity", "Squeeze", "Unsqueeze", "Cast", "Concat", "Shape",
            "Gather", "Mul", "Add", "Sub", "Div", "Sqrt", "Neg", "ConstantOfShape", "Range", "Expand"}


def _fold(c: NodeContext) -> bool:
    node = c.node
    names = [n for n in node.inputs if n]
    if node.op not in FOLDABLE or not names or not all(c.is_const(k) for k, n in enumerate(node.inputs) if n) \
            or any(n in c.b.deq_consts for n in names):
        return False
    feeds = {n: c.const(k) for k, n in enumerate(node.inputs) if n}
    outs = c.run_reference(node.op.split(":")[-1], list(node.inputs), list(node.outputs), feeds, node.attrs,
                           "computing it from its constant inputs")
    for name, value in zip(node.outputs, outs):
        c.b.folded[name] = value
    return True


def build_node(b: Builder, c: NodeContext) -> None:
    op = c.node.op
    if _fold(c):
        return
    if op in onnx_int8.QDQ:
        onnx_int8.QDQ[op](c)
        return
    if op in onnx_int8.OPS and onnx_int8.quantized_input(c) and onnx_int8.OPS[op](c):
        return
    if op not in OPS:
        raise c.refuse(f"not supported (the reader supports {', '.join(SUPPORTED)})")
    OPS[op](c)


def _output(b: Builder, g: OnnxGraph, name: str) -> tuple[Val, TensorSpec]:
    v = b.vals.get(name)
    if v is None:
        if name in g.values and g.values[name].data is not None:
            raise Refused(f"{g.path.name}: output '{name}' is a constant")
        raise Refused(f"{g.path.name}: output '{name}' is written by no node")
    quant = v.quant  # an int8 output's, or a dequantized int8 output's: compared exactly
    v = b.plain(b.dequantized(v))
    return v, TensorSpec(v.key, name, v.shape, v.dtype, quant)


def read_onnx(path) -> OnnxModel:
    """Read an .onnx file into a model (UserError, one line, for what is not supported)."""
    g = read_graph(Path(path))
    b = Builder(g)
    for name in g.inputs:
        b.vals[name] = _input(g, name)
        b.sources[name] = (name, b.vals[name].layout, None, b.vals[name].dtype)
    for node in g.nodes:
        if node.index not in b.done:
            build_node(b, NodeContext(b, node))
    outs = [_output(b, g, name) for name in g.outputs]
    inputs = []
    for name in g.inputs:
        v = b.vals[name]
        quant = None
        if v.dtype == "int8":
            q = next((u for u in b.vals.values() if u.key == name and u.quant is not None), None)
            quant = q.quant if q is not None else QParams(1.0, 0)
        inputs.append(TensorSpec(name, name, v.shape, v.dtype, quant))
    examples = tuple(example_input(spec, k) for k, spec in enumerate(inputs))
    layers = tuple(b.layers)
    # every layer's inputs come from the graph's inputs or an earlier layer
    known = {s.index for s in inputs}
    for layer in layers:
        missing = [i for i in layer.inputs if i not in known]
        if missing:
            raise Refused(f"{g.path.name}: {layer.name} reads '{missing[0]}' before any node writes it")
        known.add(layer.output)
    return OnnxModel(g.path, identifier(g.path.stem), tuple(inputs), tuple(s for _, s in outs), layers,
                     dict(b.weights), examples, dict(b.sources))


def reference_outputs(path, xs, names=None) -> list[np.ndarray]:
    """onnx.reference's outputs for inputs xs (the file's input order), or the values `names`."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    model = onnx.load(str(path))
    try:
        ev = ReferenceEvaluator(model)
        inits = {t.name for t in model.graph.initializer}
        inputs = [i.name for i in model.graph.input if i.name not in inits]
        return [np.asarray(o) for o in ev.run(names, dict(zip(inputs, xs)))]
    except Exception as e:  # e.g. no implementation of an op at the file's opset
        first = next((ln for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
        raise Refused(f"{Path(path).name}: onnx.reference cannot run it ({type(e).__name__}: {first})") from None


def is_qdq(model: OnnxModel) -> bool:
    """Whether some layer is an int8 block (a QDQ group)."""
    return any(layer.block is not None for layer in model.layers)


def _as_source(ref: np.ndarray, layout, quant, want_int8: bool) -> np.ndarray:
    """onnx.reference's value as a layer holds it: quantized (exactly: the value is a
    DequantizeLinear's output of that quantization) or dequantized, in the layer's layout."""
    from specializer.importers.onnx_layer import Flat

    a = np.asarray(ref)
    if want_int8 and a.dtype != np.int8:
        a = np.clip(np.rint(a / np.float32(quant.scale)) + quant.zero_point, -128, 127).astype(np.int8)
    elif not want_int8 and a.dtype == np.int8 and quant is not None:
        a = (a.astype(np.float32) - np.float32(quant.zero_point)) * np.float32(quant.scale)
    if isinstance(layout, Flat):
        return np.ascontiguousarray(a.reshape(a.shape[0], -1)[:, layout.columns()])
    return np.ascontiguousarray(a.transpose(layout))


_LAYERWISE: dict = {}  # the last model layerwise ran (kept alive by it) and its compiled layers


def layerwise(model: OnnxModel, xs) -> list[tuple[str, int, int, int]]:
    """Each int8 layer (block or QuantizeLinear) run on onnx.reference's own inputs against
    onnx.reference's output: (layer, values that differ, values, largest difference)."""
    import jax

    src = model.sources
    layers = [layer for layer in model.layers if src[layer.output][3] == "int8" and layer.inputs
              and (layer.block is not None or layer.name.startswith("QuantizeLinear"))]
    names = sorted({src[k][0] for layer in layers for k in (*layer.inputs, layer.output)})
    ref = dict(zip(names, reference_outputs(model.path, xs, names)))

    def value(k):
        name, layout, quant, dtype = src[k]
        return _as_source(ref[name], layout, quant, dtype == "int8")
    args = [([value(k) for k in layer.inputs], [model.weights[n] for n in layer.weights]) for layer in layers]
    if _LAYERWISE.get("model") is not model:  # every layer in one program, compiled once per model
        _LAYERWISE.update(model=model, run=jax.jit(
            lambda args: [layer.run(*ins, *ws) for layer, (ins, ws) in zip(layers, args)]))
    rows = []
    for layer, got in zip(layers, _LAYERWISE["run"](args)):
        d = np.abs(np.asarray(got).astype(np.int32) - value(layer.output).astype(np.int32))
        rows.append((layer.name, int((d > 0).sum()), int(d.size), int(d.max(initial=0))))
    return rows
