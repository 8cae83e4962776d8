"""A .tflite flatbuffer -> plain records (tensors, operators, options), unpacked by the schema's
generated object API as TFLite Micro ships it; nothing here interprets the graph.

Every refusal is one line naming the file and, for an operator, its index in the graph.
"""

from __future__ import annotations

import struct
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
DTYPES = {"FLOAT32": np.dtype("<f4"), "INT64": np.dtype("<i8"), "INT32": np.dtype("<i4"), "INT16": np.dtype("<i2"),
          "INT8": np.dtype("i1")}

# op -> (its options table, the fields read from it); RESHAPE's target shape is its output tensor's
OPTIONS = {
    "CONV_2D": ("Conv2DOptions", ("padding", "strideH", "strideW", "dilationHFactor", "dilationWFactor",
                                  "fusedActivationFunction", "quantizedBiasType")),
    "DEPTHWISE_CONV_2D": ("DepthwiseConv2DOptions", ("padding", "strideH", "strideW", "dilationHFactor",
                                                     "dilationWFactor", "depthMultiplier", "fusedActivationFunction")),
    "FULLY_CONNECTED": ("FullyConnectedOptions", ("fusedActivationFunction", "weightsFormat", "quantizedBiasType")),
    "AVERAGE_POOL_2D": ("Pool2DOptions", ("padding", "strideH", "strideW", "filterHeight", "filterWidth",
                                          "fusedActivationFunction")),
    "MAX_POOL_2D": ("Pool2DOptions", ("padding", "strideH", "strideW", "filterHeight", "filterWidth",
                                      "fusedActivationFunction")),
    "ADD": ("AddOptions", ("fusedActivationFunction",)),
    "MUL": ("MulOptions", ("fusedActivationFunction",)),
    "SUB": ("SubOptions", ("fusedActivationFunction",)),
    "SOFTMAX": ("SoftmaxOptions", ("beta",)),
    "RESHAPE": (None, ()),
    "TRANSPOSE_CONV": ("TransposeConvOptions", ("padding", "strideH", "strideW", "fusedActivationFunction")),
    # moving values (tflite_movement.py): paddings, permutation and sizes are constant inputs
    "PAD": (None, ()),
    "PADV2": (None, ()),
    "CONCATENATION": ("ConcatenationOptions", ("axis", "fusedActivationFunction")),
    "TRANSPOSE": (None, ()),
    "RESIZE_NEAREST_NEIGHBOR": ("ResizeNearestNeighborOptions", ("alignCorners", "halfPixelCenters")),
    "MEAN": ("ReducerOptions", ("keepDims",)),
    # activations (tflite_int8_activations.py)
    "LOGISTIC": (None, ()),
    "TANH": (None, ()),
    "HARD_SWISH": (None, ()),
    "LEAKY_RELU": ("LeakyReluOptions", ("alpha",)),
    # recurrent (tflite_int8_recurrent.py)
    "SVDF": ("SVDFOptions", ("rank", "fusedActivationFunction", "asymmetricQuantizeInputs")),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": ("UnidirectionalSequenceLSTMOptions",
                                     ("fusedActivationFunction", "cellClip", "projClip", "timeMajor",
                                      "asymmetricQuantizeInputs", "diagonalRecurrentTensors")),
}

# the highest version TFLite defines of each op the reader takes (LiteRT's
# tflite/converter/tools/versioning/runtime_version.cc and op_version.cc, which succeed
# tensorflow/lite/tools/versioning): a higher one is an op whose meaning the reader cannot know
MAX_VERSIONS = {"CONV_2D": 8, "DEPTHWISE_CONV_2D": 7, "FULLY_CONNECTED": 14, "AVERAGE_POOL_2D": 3, "MAX_POOL_2D": 3,
                "ADD": 6,
                "MUL": 7, "SUB": 5, "SOFTMAX": 4, "RESHAPE": 1, "TRANSPOSE_CONV": 5, "PAD": 6, "PADV2": 6,
                "CONCATENATION": 7, "TRANSPOSE": 9, "RESIZE_NEAREST_NEIGHBOR": 4, "MEAN": 3, "LOGISTIC": 3,
                "TANH": 3, "HARD_SWISH": 1, "LEAKY_RELU": 2, "SVDF": 4, "UNIDIRECTIONAL_SEQUENCE_LSTM": 4}
INT8_RANGE = (-128, 127)


def unpack_int4(raw: bytes, shape) -> np.ndarray:
    """An INT4 constant's values as int8, of its shape: two a byte, the first in the low nibble
    (TFLite's packing, tensor_utils::UnpackDenseInt4IntoInt8)."""
    b = np.frombuffer(raw, np.int8)
    pairs = np.stack([np.left_shift(b, 4) >> 4, b >> 4], axis=1).reshape(-1)
    return pairs[:int(np.prod(shape, dtype=np.int64))].reshape(shape)


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
    type: str                    # the schema's name: INT8, INT32, FLOAT32, ... (INT4: data unpacked to int8)
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
    if len(raw) < 8:  # the root table's offset and the file identifier
        raise UserError(f"{path.name}: not a TFLite flatbuffer ({len(raw)} bytes; its header alone is 8)")
    if not schema.Model.ModelBufferHasIdentifier(raw, 0):
        raise UserError(f"{path.name}: not a TFLite flatbuffer (no 'TFL3' file identifier)")
    try:
        model = schema.ModelT.InitFromPackedBuf(raw, 0)
    except struct.error:  # flatbuffers' reads past the end of the bytes: a cut file, or a wild offset
        raise UserError(f"{path.name}: truncated or damaged flatbuffer: a table or vector lies past the end of "
                        f"its {len(raw)} bytes") from None
    except Exception as e:  # a damaged file: offsets that lead elsewhere
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


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _out_of_range(indices, lowest: int, n: int) -> str | None:
    """'input 1 is tensor 40, out of range (...)' for the first index outside [lowest, n), else None."""
    k = next((k for k, i in enumerate(indices) if not lowest <= i < n), None)
    return None if k is None else f"{k} is tensor {indices[k]}, out of range (the graph has {_count(n, 'tensor')})"


def _check_indices(g: GraphRecord) -> None:
    """Every tensor index the graph names is one of its tensors (-1: an absent optional input),
    and every operator writes one: a damaged file is one line here, not an IndexError later."""
    n = len(g.tensors)
    for kind, indices in (("input", g.inputs), ("output", g.outputs)):
        if not indices:
            raise UserError(f"{g.path.name}: the subgraph has no {kind}s")
        bad = _out_of_range(indices, 0, n)
        if bad:
            raise UserError(f"{g.path.name}: subgraph {kind} {bad}")
    for op in g.ops:
        if not op.outputs:
            raise refuse_op(g.path, op, "has no output")
        for kind, indices, lowest in (("input", op.inputs, -1), ("output", op.outputs, 0)):
            bad = _out_of_range(indices, lowest, n)
            if bad:
                raise refuse_op(g.path, op, f"{kind} {bad}")


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
    quant = _quant(where, t.quantization, shape, type_name)
    n_buffers = len(model.buffers or [])
    if not 0 <= t.buffer < max(n_buffers, 1):  # buffer 0 is "no data", whether or not the file has it
        raise UserError(f"{where}: buffer {t.buffer} is out of range (the file has {_count(n_buffers, 'buffer')})")
    if any(d < 0 for d in shape) and t.buffer:
        raise UserError(f"{where}: a constant of shape {list(shape)} (a negative dimension)")
    buf = model.buffers[t.buffer] if t.buffer else None
    if t.externalBuffer or (buf is not None and buf.offset > 1):
        raise Refused(f"{where}: data stored outside the flatbuffer is not supported")
    data = None
    if buf is not None and buf.data is not None and len(buf.data):
        if type_name not in DTYPES and type_name != "INT4":
            raise Refused(f"{where}: constant of type {type_name} is not supported")
        raw = np.asarray(buf.data, np.uint8).tobytes()
        n = int(np.prod(shape, dtype=np.int64))
        size = (n + 1) // 2 if type_name == "INT4" else DTYPES[type_name].itemsize * n
        if len(raw) != size:  # TFLite would read past it, or leave part of it unread: a damaged file
            raise UserError(f"{where}: {len(raw)} bytes of data, but {type_name}{list(shape)} takes {size}")
        data = unpack_int4(raw, shape) if type_name == "INT4" else np.frombuffer(raw, DTYPES[type_name]).reshape(shape)
    return TensorRecord(index, name, shape, type_name, quant, data)


def _quant(where: str, q, shape: tuple[int, ...], type_name: str) -> Quant | None:
    """A tensor's quantization, checked as TFLite's interpreter checks it when it loads a model:
    positive finite scales, a zero point for each, per channel one scale for each slice of the
    quantized dimension; and an int8 tensor's zero points inside int8."""
    if q is None or q.scale is None or not len(q.scale):
        return None
    if q.detailsType != 0:
        raise Refused(f"{where}: quantization details of kind {q.detailsType} are not supported")
    scales = tuple(float(s) for s in np.asarray(q.scale, np.float32))
    bad = next((s for s in scales if not (np.isfinite(s) and s > 0)), None)
    if bad is not None:
        raise Refused(f"{where}: quantization scale {bad!r} is not a positive finite number")
    zps = _ints(q.zeroPoint) if q.zeroPoint is not None and len(q.zeroPoint) else (0,) * len(scales)
    if len(zps) != len(scales):
        raise UserError(f"{where}: {_count(len(scales), 'scale')} but {_count(len(zps), 'zero point')}")
    lo, hi = INT8_RANGE
    if type_name == "INT8" and any(not lo <= z <= hi for z in zps):
        raise UserError(f"{where}: zero point {next(z for z in zps if not lo <= z <= hi)} is outside int8's "
                        f"[{lo}, {hi}]")
    axis = int(q.quantizedDimension)
    if len(scales) > 1:  # per channel: the axis is one of the shape's, and one scale per slice
        if not 0 <= axis < len(shape):
            raise UserError(f"{where}: quantized dimension {axis} is outside its shape {list(shape)}")
        if len(scales) != shape[axis]:
            raise UserError(f"{where}: {len(scales)} scales along dimension {axis} of {list(shape)}; per "
                            f"channel it takes {shape[axis]}")
    return Quant(scales, zps, axis)


def _op(path: Path, model, op, index: int) -> OpRecord:
    n_codes = len(model.operatorCodes or [])
    if not 0 <= op.opcodeIndex < n_codes:
        raise UserError(f"{path.name}: operator {index}: opcode index {op.opcodeIndex} is out of range "
                        f"(the file has {_count(n_codes, 'operator code')})")
    code = model.operatorCodes[op.opcodeIndex]
    # TFLite's GetBuiltinCode: files from before the opcode was widened keep it in the deprecated byte
    builtin = get_builtin_code_from_operator_code(code)
    name = OP_NAMES.get(builtin, f"opcode {builtin}")
    if builtin == schema.BuiltinOperator.CUSTOM:
        name = f"CUSTOM '{_text(code.customCode)}'"
    record = OpRecord(index, name, _ints(op.inputs), _ints(op.outputs))
    if name not in OPTIONS:
        raise refuse_op(path, record, f"not supported (the reader supports {', '.join(OPTIONS)})")
    if not 1 <= code.version <= MAX_VERSIONS[name]:  # a newer TFLite's op: its semantics are unknown here
        raise refuse_op(path, record, f"version {code.version} is unknown (TFLite defines versions "
                                      f"1-{MAX_VERSIONS[name]} of {name})")
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
