"""A .tflite flatbuffer -> plain records (tensors, operators, options), unpacked by the schema's
generated object API as TFLite Micro ships it; nothing here interprets the graph.

Every refusal is one line naming the file and, for an operator, its index in the graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tflite_micro.python.tflite_micro.runtime import get_builtin_code_from_operator_code
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

from specializer import files
from specializer.errors import UserError


def _names(enum) -> dict[int, str]:
    return {code: name for name, code in vars(enum).items() if not name.startswith("_")}


OP_NAMES = _names(schema.BuiltinOperator)
TYPE_NAMES = _names(schema.TensorType)
PADDING_NAMES = _names(schema.Padding)
ACTIVATION_NAMES = _names(schema.ActivationFunctionType)
# the element types whose data the reader can hold (little-endian, as the format stores them)
DTYPES = {"FLOAT32": np.dtype("<f4"), "INT32": np.dtype("<i4"), "INT8": np.dtype("i1")}

# op -> (its options table, the fields read from it); RESHAPE's target shape is its output tensor's
OPTIONS = {
    "CONV_2D": ("Conv2DOptions", ("padding", "strideH", "strideW", "dilationHFactor", "dilationWFactor",
                                  "fusedActivationFunction")),
    "DEPTHWISE_CONV_2D": ("DepthwiseConv2DOptions", ("padding", "strideH", "strideW", "dilationHFactor",
                                                     "dilationWFactor", "depthMultiplier", "fusedActivationFunction")),
    "FULLY_CONNECTED": ("FullyConnectedOptions", ("fusedActivationFunction", "weightsFormat")),
    "AVERAGE_POOL_2D": ("Pool2DOptions", ("padding", "strideH", "strideW", "filterHeight", "filterWidth",
                                          "fusedActivationFunction")),
    "ADD": ("AddOptions", ("fusedActivationFunction",)),
    "SOFTMAX": ("SoftmaxOptions", ("beta",)),
    "RESHAPE": (None, ()),
}


@dataclass(frozen=True)
class Quant:
    """Affine quantization: real = scale * (q - zero_point), one pair per slice along `axis`
    (a single pair: per tensor). Scales are the file's float32 values, held exactly."""
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int


@dataclass(frozen=True, eq=False)
class TensorRecord:
    index: int
    name: str
    shape: tuple[int, ...]
    type: str                    # the schema's name: INT8, INT32, FLOAT32, ...
    quant: Quant | None
    data: np.ndarray | None      # a constant's values (shaped), None for an activation


@dataclass(frozen=True)
class OpRecord:
    index: int
    name: str                    # the builtin operator's name, e.g. CONV_2D
    inputs: tuple[int, ...]      # tensor indices, -1 for an absent optional input
    outputs: tuple[int, ...]
    options: dict = field(default_factory=dict)  # option field -> value (OPTIONS)


@dataclass(frozen=True, eq=False)
class GraphRecord:
    path: Path
    tensors: tuple[TensorRecord, ...]
    ops: tuple[OpRecord, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


class Refused(UserError):
    """What the reader does not support, in one line."""


def refuse_op(path: Path, op: OpRecord, what: str) -> Refused:
    return Refused(f"{path.name}: operator {op.index} ({op.name}): {what}")


def read_graph(path: Path) -> GraphRecord:
    path = Path(path)
    raw = files.read_bytes(path)
    if len(raw) < 8 or not schema.Model.ModelBufferHasIdentifier(raw, 0):
        raise UserError(f"{path.name}: not a TFLite flatbuffer (no 'TFL3' file identifier)")
    try:
        model = schema.ModelT.InitFromPackedBuf(raw, 0)
    except Exception as e:  # a damaged file: offsets that lead outside it
        raise UserError(f"{path.name}: damaged flatbuffer ({type(e).__name__}: {e})") from None
    return _graph(path, model)


def _graph(path: Path, model) -> GraphRecord:
    subgraphs = model.subgraphs or []
    if len(subgraphs) != 1:
        raise Refused(f"{path.name}: {len(subgraphs)} subgraphs; the reader takes models of one subgraph "
                      "(no control flow)")
    sg = subgraphs[0]
    tensors = tuple(_tensor(path, model, t, i) for i, t in enumerate(sg.tensors or []))
    ops = tuple(_op(path, model, op, i) for i, op in enumerate(sg.operators or []))
    g = GraphRecord(path, tensors, ops, _ints(sg.inputs), _ints(sg.outputs))
    _check_indices(g)
    return g


def _damaged(path: Path, what: str) -> UserError:
    return UserError(f"{path.name}: damaged flatbuffer ({what})")


def _check_indices(g: GraphRecord) -> None:
    """Every tensor index the graph names is one of its tensors (-1: an absent optional input),
    and every operator writes one: a damaged file is one line here, not an IndexError later."""
    n = len(g.tensors)
    for kind, indices in (("input", g.inputs), ("output", g.outputs)):
        bad = [i for i in indices if not 0 <= i < n]
        if bad or not indices:
            raise _damaged(g.path, f"graph {kind} tensor {bad[0] if bad else 'missing'}; it has {n} tensors")
    for op in g.ops:
        bad = [i for i in op.inputs if not -1 <= i < n] + [i for i in op.outputs if not 0 <= i < n]
        if bad or not op.outputs:
            raise _damaged(g.path, f"operator {op.index} ({op.name}) names tensor "
                                   f"{bad[0] if bad else '(no output)'}; the graph has {n} tensors")


def _ints(values) -> tuple[int, ...]:
    return tuple(int(v) for v in values) if values is not None else ()


def _text(b) -> str:
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else (b or "")


def _tensor(path: Path, model, t, index: int) -> TensorRecord:
    name = _text(t.name)
    shape = _ints(t.shape)
    type_name = TYPE_NAMES.get(t.type, f"type {t.type}")
    where = f"{path.name}: tensor {index} ('{name}')"
    if t.sparsity is not None:
        raise Refused(f"{where}: sparse tensors are not supported")
    q = t.quantization
    quant = None
    if q is not None and q.scale is not None and len(q.scale):
        if q.detailsType != 0:
            raise Refused(f"{where}: quantization details of kind {q.detailsType} are not supported")
        scales = tuple(float(s) for s in np.asarray(q.scale, np.float32))
        if not all(np.isfinite(s) and s > 0 for s in scales):
            raise Refused(f"{where}: quantization scale {next(s for s in scales if not (np.isfinite(s) and s > 0))!r} "
                          "is not a positive finite number")
        zps = _ints(q.zeroPoint) if q.zeroPoint is not None and len(q.zeroPoint) else (0,) * len(scales)
        quant = Quant(scales, zps, int(q.quantizedDimension))
    if not 0 <= t.buffer < max(len(model.buffers or []), 1):
        raise _damaged(path, f"tensor {index} names buffer {t.buffer}; the file has {len(model.buffers or [])}")
    if any(d < 0 for d in shape) and t.buffer:
        raise _damaged(path, f"tensor {index} is a constant of shape {list(shape)}")
    buf = model.buffers[t.buffer] if t.buffer else None
    if t.externalBuffer or (buf is not None and buf.offset > 1):
        raise Refused(f"{where}: data stored outside the flatbuffer is not supported")
    data = None
    if buf is not None and buf.data is not None and len(buf.data):
        if type_name not in DTYPES:
            raise Refused(f"{where}: constant of type {type_name} is not supported")
        raw = np.asarray(buf.data, np.uint8).tobytes()
        dtype = DTYPES[type_name]
        if len(raw) != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
            raise _damaged(path, f"tensor {index}: {len(raw)} bytes of data for {type_name}{list(shape)}")
        data = np.frombuffer(raw, dtype).reshape(shape)
    return TensorRecord(index, name, shape, type_name, quant, data)


def _op(path: Path, model, op, index: int) -> OpRecord:
    if not 0 <= op.opcodeIndex < len(model.operatorCodes or []):
        raise _damaged(path, f"operator {index} has opcode index {op.opcodeIndex}; the file has "
                             f"{len(model.operatorCodes or [])}")
    code = model.operatorCodes[op.opcodeIndex]
    # TFLite's GetBuiltinCode: files from before the opcode was widened keep it in the deprecated byte
    builtin = get_builtin_code_from_operator_code(code)
    name = OP_NAMES.get(builtin, f"opcode {builtin}")
    if builtin == schema.BuiltinOperator.CUSTOM:
        name = f"CUSTOM '{_text(code.customCode)}'"
    record = OpRecord(index, name, _ints(op.inputs), _ints(op.outputs))
    if name not in OPTIONS:
        raise refuse_op(path, record, f"not supported (the reader supports {', '.join(OPTIONS)})")
    table, fields = OPTIONS[name]
    if table is None:
        return record
    opts = op.builtinOptions
    if opts is None or op.builtinOptionsType != getattr(schema.BuiltinOptions, table):
        raise refuse_op(path, record, f"has no {table}")
    return OpRecord(index, name, record.inputs, record.outputs, {f: getattr(opts, f) for f in fields})


def with_outputs(data: bytes, tensors: tuple[int, ...]) -> bytes:
    """The model `data` with its subgraph's outputs set to `tensors` (indices), written back by the
    schema's object API (TFLite Micro's model_editor drops the deprecated_builtin_code of older
    files: every operator of the MLPerf KWS file came back a SOFTMAX): its interpreter then
    reports each of them, e.g. every layer's output."""
    import flatbuffers

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(data, 0))
    model.subgraphs[0].outputs = list(tensors)
    builder = flatbuffers.Builder(len(data) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
