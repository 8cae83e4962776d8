"""An .onnx file -> a plain record of its graph: every value's static shape and element type,
the constants (initializers and Constant nodes) as arrays, the nodes with their attributes.
Nothing here interprets an operator.

Loading goes through the `onnx` package: the protobuf is parsed, checked (onnx.checker) and its
shapes inferred (onnx.shape_inference, strict); whatever fails is one line naming the file. A
symbolic first dimension of a graph input (a batch size) is taken as 1; any other symbolic
dimension is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from specializer import files
from specializer.errors import UserError

# the element types a value may have (numpy's names), by TensorProto's code
DTYPES = {onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.INT8: "int8", onnx.TensorProto.UINT8: "uint8",
          onnx.TensorProto.INT32: "int32", onnx.TensorProto.INT64: "int64", onnx.TensorProto.BOOL: "bool",
          onnx.TensorProto.DOUBLE: "float64", onnx.TensorProto.FLOAT16: "float16",
          onnx.TensorProto.INT16: "int16", onnx.TensorProto.UINT16: "uint16"}


DEFAULT_DOMAINS = ("", "ai.onnx")


def type_name(code: int) -> str:
    if code in DTYPES:
        return DTYPES[code]
    return onnx.TensorProto.DataType.Name(code).lower() if code in onnx.TensorProto.DataType.values() else f"type {code}"


@dataclass(frozen=True, eq=False)
class ValueRecord:
    name: str
    shape: tuple[int, ...]
    dtype: str                   # numpy's name: float32, int8, uint8, int32, int64, ...
    data: np.ndarray | None      # a constant's values, None for a computed value


@dataclass(frozen=True)
class NodeRecord:
    index: int                   # position in the file's node list (its topological order)
    op: str                      # op_type; "domain:op_type" outside the default domain
    name: str
    inputs: tuple[str, ...]      # value names, "" for an absent optional input
    outputs: tuple[str, ...]
    attrs: dict = field(default_factory=dict)  # attribute -> value (strings decoded)

    def where(self) -> str:
        return f"node {self.index} ({self.op}{f' {self.name!r}' if self.name else ''})"


@dataclass(frozen=True, eq=False)
class OnnxGraph:
    path: Path
    opset: int                   # the default domain's opset version
    ir_version: int
    producer: str
    values: dict                 # name -> ValueRecord, for every value with a known type
    nodes: tuple[NodeRecord, ...]
    inputs: tuple[str, ...]      # graph inputs that are not initializers
    outputs: tuple[str, ...]

    def consumers(self, name: str) -> list[NodeRecord]:
        return [n for n in self.nodes if name in n.inputs]


class Refused(UserError):
    """What the reader does not support, in one line."""


def refuse_node(path: Path, node: NodeRecord, what: str) -> Refused:
    return Refused(f"{path.name}: {node.where()}: {what}")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("==>") and line != "Context:":
            return line[:300]
    return type(e).__name__


def read_graph(path: Path) -> OnnxGraph:
    path = Path(path)
    raw = files.read_bytes(path)
    try:
        model = onnx.load_model_from_string(raw)
    except Exception as e:  # protobuf's DecodeError, and whatever a damaged file raises
        raise UserError(f"{path.name}: not an ONNX model (the protobuf does not parse: {_first_line(e)})") from None
    if not model.HasField("graph") or model.ir_version <= 0:
        raise UserError(f"{path.name}: not an ONNX model (no graph or no IR version)")
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            raise Refused(f"{path.name}: initializer '{t.name}' keeps its data in an external file; "
                          "save the model with its data inside (onnx.save_model(..., save_as_external_data=False))")
    _check_structure(path, model)
    try:
        onnx.checker.check_model(model)
    except Exception as e:  # ValidationError, and the checker's own failures on a damaged graph
        raise UserError(f"{path.name}: invalid ONNX model (onnx.checker: {_first_line(e)})") from None
    _fix_batch(path, model)
    try:
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    except Exception as e:
        raise UserError(f"{path.name}: invalid ONNX model (shape inference: {_first_line(e)})") from None
    return _graph(path, model)


def _check_structure(path: Path, model) -> None:
    """What onnx.checker misses or words without naming the node: an opset newer than the
    installed onnx knows, a node of another domain, an initializer's data of another size than
    its dims, a node input that no graph input, initializer or earlier node gives, graph outputs
    missing or written by no node."""
    _check_opset(path, model)
    for t in model.graph.initializer:
        _check_data_size(path, t)
    g = model.graph
    known = {v.name for v in g.input} | {t.name for t in g.initializer}
    writer = {out: k for k, n in enumerate(g.node) for out in n.output}
    for k, n in enumerate(g.node):
        where = NodeRecord(k, n.op_type if n.domain in DEFAULT_DOMAINS else f"{n.domain}:{n.op_type}", n.name,
                           (), ()).where()
        if n.domain not in DEFAULT_DOMAINS:
            raise Refused(f"{path.name}: {where}: domain '{n.domain}' is not supported (the reader takes the "
                          "default ONNX domain only)")
        for i, name in enumerate(n.input):
            if name and name not in known:
                later = writer.get(name)
                why = ("is no graph input, initializer or node output" if later is None else
                       "is the node's own output" if later == k else
                       f"is written by a later node (node {later}); nodes must be in topological order")
                raise UserError(f"{path.name}: {where}: input {i} '{name}' {why}")
        known.update(n.output)
    if not g.output:
        raise UserError(f"{path.name}: the graph has no outputs")
    for o in g.output:
        if o.name not in known:
            raise UserError(f"{path.name}: graph output '{o.name}' is written by no node")


def _check_opset(path: Path, model) -> None:
    """The default domain's opset is one the installed onnx defines: its checker and shape
    inference take a newer one for the newest they know, so its ops' meaning would be guessed."""
    newest = onnx.defs.onnx_opset_version()
    for o in model.opset_import:
        if o.domain in DEFAULT_DOMAINS and o.version > newest:
            raise UserError(f"{path.name}: opset {o.version} of the default domain is unknown (onnx "
                            f"{onnx.__version__} defines opsets up to {newest})")


# TensorProto's typed field for each element type the reader holds (int8 to uint16 one value each)
_FIELDS = {onnx.TensorProto.FLOAT: "float_data", onnx.TensorProto.DOUBLE: "double_data",
           onnx.TensorProto.INT64: "int64_data", **{t: "int32_data" for t in (
               onnx.TensorProto.INT32, onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.INT16,
               onnx.TensorProto.UINT16, onnx.TensorProto.BOOL, onnx.TensorProto.FLOAT16)}}


def _check_data_size(path: Path, t) -> None:
    """An initializer holds exactly the values its dims ask for (the checker only sees raw data
    that is too short; numpy would fail on the rest with its own words)."""
    if t.data_type not in _FIELDS or any(d < 0 for d in t.dims):  # other types: to_array's check
        return
    count = int(np.prod(t.dims, dtype=np.int64))
    what = f"{DTYPES[t.data_type]}{list(t.dims)}"
    if t.HasField("raw_data"):
        size = count * np.dtype(DTYPES[t.data_type]).itemsize
        if len(t.raw_data) != size:
            raise UserError(f"{path.name}: initializer '{t.name}': {len(t.raw_data)} bytes of raw data, but "
                            f"{what} takes {size}")
    elif len(getattr(t, _FIELDS[t.data_type])) != count:
        raise UserError(f"{path.name}: initializer '{t.name}': {len(getattr(t, _FIELDS[t.data_type]))} values, "
                        f"but {what} takes {count}")


def _fix_batch(path: Path, model) -> None:
    """A symbolic (or unknown) first dimension of a graph input becomes 1; others are refused."""
    inits = {t.name for t in model.graph.initializer}
    for v in model.graph.input:
        if v.name in inits or not v.type.HasField("tensor_type"):
            continue
        dims = v.type.tensor_type.shape.dim
        for k, d in enumerate(dims):
            if d.HasField("dim_value"):
                continue
            if k == 0:
                d.Clear()
                d.dim_value = 1
            else:
                what = f"'{d.dim_param}'" if d.dim_param else "unknown"
                raise Refused(f"{path.name}: input '{v.name}' has a {what} dimension {k}; the reader needs "
                              "fixed shapes (a symbolic first dimension is taken as 1)")


def _value(path: Path, v) -> ValueRecord | None:
    if not v.type.HasField("tensor_type"):
        return None
    tt = v.type.tensor_type
    if not tt.HasField("shape") or not all(d.HasField("dim_value") for d in tt.shape.dim):
        return ValueRecord(v.name, None, type_name(tt.elem_type), None)
    return ValueRecord(v.name, tuple(int(d.dim_value) for d in tt.shape.dim), type_name(tt.elem_type), None)


def _array(path: Path, t, what: str) -> np.ndarray:
    try:
        return np.asarray(numpy_helper.to_array(t))
    except Exception as e:
        raise UserError(f"{path.name}: damaged {what} '{t.name}' ({_first_line(e)})") from None


def _attrs(path: Path, node) -> dict:
    out = {}
    for a in node.attribute:
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            out[a.name] = "<graph>"
            continue
        try:
            v = helper.get_attribute_value(a)
        except Exception as e:
            raise UserError(f"{path.name}: damaged attribute '{a.name}' of node '{node.name}' ({_first_line(e)})") \
                from None
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, list):
            v = tuple(x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v)
        elif isinstance(v, onnx.TensorProto):
            v = _array(path, v, "tensor attribute")
        out[a.name] = v
    return out


def _constant(path: Path, node: NodeRecord) -> np.ndarray:
    a = node.attrs
    if "value" in a:
        return a["value"]
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32), ("value_int", np.int64),
                       ("value_ints", np.int64)):
        if key in a:
            return np.asarray(a[key], dtype)
    raise refuse_node(path, node, f"a constant given as {', '.join(a) or 'nothing'} is not supported")


def _graph(path: Path, model) -> OnnxGraph:
    g = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS), 0)
    values: dict[str, ValueRecord] = {}
    for v in [*g.value_info, *g.input, *g.output]:
        r = _value(path, v)
        if r is not None:
            values[v.name] = r
    for t in g.initializer:
        data = _array(path, t, "initializer")
        values[t.name] = ValueRecord(t.name, tuple(data.shape), str(data.dtype), data)
    inits = {t.name for t in g.initializer}
    nodes = []
    for index, n in enumerate(g.node):
        op = n.op_type if n.domain in DEFAULT_DOMAINS else f"{n.domain}:{n.op_type}"
        rec = NodeRecord(index, op, n.name, tuple(n.input), tuple(n.output), _attrs(path, n))
        if op == "Constant" and len(rec.outputs) == 1:
            data = _constant(path, rec)
            values[rec.outputs[0]] = ValueRecord(rec.outputs[0], tuple(data.shape), str(data.dtype), data)
            continue  # a constant is a value, not a layer
        nodes.append(rec)
    return OnnxGraph(path, opset, model.ir_version, model.producer_name, values, tuple(nodes),
                     tuple(v.name for v in g.input if v.name not in inits), tuple(v.name for v in g.output))
