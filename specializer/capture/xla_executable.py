"""Decode jax's serialized XLA:CPU executable: buffer assignment, thunk sequence, constants.

Why this and not XLA's text dumps: the executable is the one machine-readable record of what
XLA:CPU runs. It is decoded by the protobuf library with our own subset of XLA's schema
(specializer/capture/proto/xla_subset.proto); fields the pipeline does not read are not in it.

Layers, as ``client.serialize_executable(compiled.runtime_executable())`` writes them:
varint(len) + IFRT header, then an ExecutableAndOptionsProto whose field 1 holds the
CompilationResultProto (HLO module, buffer assignment, thunk sequence).

Constants: the thunk runtime rebuilds constant buffers at load time from the HLO module's
``constant`` instructions, so their bytes come from each instruction's literal, placed through
the buffer assignment. Constants fused into a kernel are in the kernel's IR and have no buffer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

import numpy as np
from google.protobuf.message import DecodeError as _ProtobufDecodeError

from specializer.capture.proto import xla_subset_pb2 as pb


class DecodeError(ValueError):
    """The bytes are not a serialized XLA:CPU thunk-runtime executable (one line: what and why)."""


# xla.PrimitiveType -> (name, bytes per element); sub-byte types have no whole-byte size.
PRIMITIVE_TYPES: dict[int, tuple[str, int | None]] = {
    1: ("pred", 1), 2: ("s8", 1), 3: ("s16", 2), 4: ("s32", 4), 5: ("s64", 8), 6: ("u8", 1),
    7: ("u16", 2), 8: ("u32", 4), 9: ("u64", 8), 10: ("f16", 2), 11: ("f32", 4), 12: ("f64", 8),
    13: ("tuple", None), 14: ("opaque", None), 15: ("c64", 8), 16: ("bf16", 2), 17: ("token", None),
    18: ("c128", 16), 19: ("f8e5m2", 1), 20: ("f8e4m3fn", 1), 21: ("s4", None), 22: ("u4", None),
    23: ("f8e4m3b11fnuz", 1), 24: ("f8e5m2fnuz", 1), 25: ("f8e4m3fnuz", 1), 26: ("s2", None),
    27: ("u2", None), 28: ("f8e4m3", 1), 29: ("f8e3m4", 1), 30: ("s1", None), 31: ("u1", None),
    32: ("f4e2m1fn", None), 33: ("f8e8m0fnu", 1),
}


@dataclass(frozen=True)
class Shape:
    element_type: int
    dims: tuple[int, ...] = ()
    tuple_shapes: tuple["Shape", ...] = ()
    minor_to_major: tuple[int, ...] | None = None  # None: the proto has no layout

    @property
    def dtype(self) -> str:
        return PRIMITIVE_TYPES.get(self.element_type, (f"type{self.element_type}", None))[0]

    @property
    def is_tuple(self) -> bool:
        return self.element_type == 13

    def __str__(self) -> str:
        if self.is_tuple:
            return "(" + ", ".join(map(str, self.tuple_shapes)) + ")"
        s = f"{self.dtype}[{','.join(map(str, self.dims))}]"
        if self.minor_to_major is not None and len(self.dims) > 1:
            s += "{" + ",".join(map(str, self.minor_to_major)) + "}"
        return s


def _shape(m: pb.ShapeProto) -> Shape:
    return Shape(m.element_type, tuple(m.dimensions), tuple(_shape(t) for t in m.tuple_shapes),
                 tuple(m.layout.minor_to_major) if m.HasField("layout") else None)


@dataclass(frozen=True)
class Slice:
    allocation: int
    offset: int
    size: int

    def __str__(self) -> str:
        return f"alloc{self.allocation}[{self.offset}:+{self.size}]"


def _slice(m: pb.BufferAllocationSliceProto) -> Slice:
    return Slice(m.buffer_allocation_index, m.offset, m.size)


@dataclass(frozen=True)
class ShapedSlice:
    slice: Slice
    shape: Shape | None

    def __str__(self) -> str:
        return f"{self.slice} {self.shape}" if self.shape is not None else str(self.slice)


def _shaped(m: pb.ShapeBufferAllocationSliceProto | pb.ShapedSliceProto) -> ShapedSlice:
    return ShapedSlice(_slice(m.slice), _shape(m.shape) if m.HasField("shape") else None)


@dataclass(frozen=True)
class Value:
    """An HLO value placed in an allocation: instruction{index} at [offset, offset + size)."""
    instruction: str
    index: tuple[int, ...]  # shape index inside a tuple-shaped instruction; () for arrays
    offset: int
    size: int


@dataclass(frozen=True)
class Allocation:
    index: int
    size: int
    # parameter | constant | thread-local | output (maybe live out) | temp; first that holds
    kind: str
    parameter: int | None = None
    values: tuple[Value, ...] = ()


def _kind(a: pb.BufferAllocationProto) -> str:
    if a.is_entry_computation_parameter:
        return "parameter"
    if a.is_constant:
        return "constant"
    if a.is_thread_local:
        return "thread-local"
    return "output" if a.maybe_live_out else "temp"


# --- Thunks: the kinds capture lowers get their own node; any other is a plain Thunk, which
# capture refuses by its kind and HLO instruction.


@dataclass(frozen=True, kw_only=True)
class Thunk:
    kind: str  # the runtime's kind, e.g. "kernel", "sort", "custom-call"
    op_name: str  # the HLO instruction

    def nested(self) -> tuple[tuple[str, tuple["Thunk", ...]], ...]:
        """Nested thunk sequences, labelled, in execution order."""
        return ()

    def buffer_slices(self) -> tuple[Slice, ...]:
        """The slices this thunk itself reads or writes (not its nested thunks')."""
        return ()

    def walk(self) -> Iterator["Thunk"]:
        yield self
        for _, seq in self.nested():
            for t in seq:
                yield from t.walk()


@dataclass(frozen=True, kw_only=True)
class KernelThunk(Thunk):
    """``ptr @kernel_name(ptr %frame)``; its frame's arguments are ``arguments + results``."""
    kernel_name: str
    num_workgroups: tuple[int, int, int]
    arguments: tuple[ShapedSlice, ...]
    results: tuple[ShapedSlice, ...]

    @property
    def args(self) -> tuple[ShapedSlice, ...]:
        return self.arguments + self.results

    def buffer_slices(self):
        return tuple(a.slice for a in self.args)


@dataclass(frozen=True, kw_only=True)
class CustomCallThunk(Thunk):
    """A custom call (the int8 blocks' `cmsis_nn.<op>` targets): its operand and result buffers."""
    target_name: str
    api_version: int
    backend_config: str
    arguments: tuple[ShapedSlice, ...]
    results: tuple[ShapedSlice, ...]

    def buffer_slices(self) -> tuple[Slice, ...]:
        return tuple(s.slice for s in self.arguments + self.results)


@dataclass(frozen=True, kw_only=True)
class CopyThunk(Thunk):
    src: ShapedSlice
    dst: ShapedSlice

    def buffer_slices(self):
        return (self.src.slice, self.dst.slice)


@dataclass(frozen=True, kw_only=True)
class WhileThunk(Thunk):
    cond_buffer: Slice  # the pred the condition sequence writes
    cond_sequence: tuple[Thunk, ...]
    body_sequence: tuple[Thunk, ...]
    trip_count: int | None = None

    def buffer_slices(self):
        return (self.cond_buffer,)

    def nested(self):
        return (("cond", self.cond_sequence), ("body", self.body_sequence))


@dataclass(frozen=True, kw_only=True)
class ConditionalThunk(Thunk):
    """The index buffer holds an s32 branch index, or a pred (true selects branch 0)."""
    branch_index_buffer: Slice
    branches: tuple[tuple[Thunk, ...], ...]

    def buffer_slices(self):
        return (self.branch_index_buffer,)

    def nested(self):
        return tuple((f"branch{i}", b) for i, b in enumerate(self.branches))


@dataclass(frozen=True, kw_only=True)
class CallThunk(Thunk):
    called_sequence: tuple[Thunk, ...]

    def nested(self):
        return (("called", self.called_sequence),)


@dataclass(frozen=True, kw_only=True)
class DotThunk(Thunk):
    dot_dimensions: Mapping[str, tuple[int, ...]]  # lhs_contracting, rhs_contracting, lhs_batch, rhs_batch
    lhs: ShapedSlice
    rhs: ShapedSlice
    out: ShapedSlice

    def buffer_slices(self):
        return (self.lhs.slice, self.rhs.slice, self.out.slice)


@dataclass(frozen=True, kw_only=True)
class ConvolutionThunk(Thunk):
    dimension_numbers: Mapping[str, object]
    window: tuple[Mapping[str, object], ...]
    feature_group_count: int
    input: ShapedSlice
    kernel: ShapedSlice
    output: ShapedSlice

    def buffer_slices(self):
        return (self.input.slice, self.kernel.slice, self.output.slice)


def _dot_dims(m: pb.DotDimensionNumbers) -> dict[str, tuple[int, ...]]:
    return {"lhs_contracting": tuple(m.lhs_contracting_dimensions),
            "rhs_contracting": tuple(m.rhs_contracting_dimensions),
            "lhs_batch": tuple(m.lhs_batch_dimensions), "rhs_batch": tuple(m.rhs_batch_dimensions)}


def _conv_dims(m: pb.ConvolutionDimensionNumbers) -> dict[str, object]:
    return {"input_batch": m.input_batch_dimension, "input_feature": m.input_feature_dimension,
            "input_spatial": tuple(m.input_spatial_dimensions),
            "kernel_input_feature": m.kernel_input_feature_dimension,
            "kernel_output_feature": m.kernel_output_feature_dimension,
            "kernel_spatial": tuple(m.kernel_spatial_dimensions),
            "output_batch": m.output_batch_dimension, "output_feature": m.output_feature_dimension,
            "output_spatial": tuple(m.output_spatial_dimensions)}


def _window(m: pb.Window) -> tuple[dict[str, object], ...]:
    return tuple({"size": d.size, "stride": d.stride, "padding_low": d.padding_low,
                  "padding_high": d.padding_high, "window_dilation": d.window_dilation,
                  "base_dilation": d.base_dilation, "window_reversal": d.window_reversal}
                 for d in m.dimensions)


def _sequence(m: pb.ThunkSequenceProto) -> tuple[Thunk, ...]:
    return tuple(_thunk(t) for t in m.thunks)


def _thunk(m: pb.ThunkProto) -> Thunk:
    common = {"kind": m.kind, "op_name": m.info.op_name}
    impl = m.WhichOneof("impl")
    if impl == "kernel_thunk":
        k = m.kernel_thunk
        wg = k.num_workgroups  # proto3 drops zeros: an absent count is one workgroup
        return KernelThunk(**common, kernel_name=k.kernel_name,
                           num_workgroups=(wg.x or 1, wg.y or 1, wg.z or 1),
                           arguments=tuple(map(_shaped, k.arguments_buffers)),
                           results=tuple(map(_shaped, k.results_buffers)))
    if impl == "copy_thunk":
        return CopyThunk(**common, src=_shaped(m.copy_thunk.src_buffer_shape),
                         dst=_shaped(m.copy_thunk.dst_buffer_shape))
    if impl == "while_thunk":
        w = m.while_thunk
        return WhileThunk(**common, cond_sequence=_sequence(w.cond_sequence),
                          body_sequence=_sequence(w.body_sequence),
                          trip_count=w.trip_count.value if w.trip_count.contains_value else None,
                          cond_buffer=_slice(w.cond_buffer))
    if impl == "custom_call_thunk":
        c = m.custom_call_thunk
        return CustomCallThunk(**common, api_version=c.api_version, target_name=c.target_name,
                               backend_config=c.backend_config,
                               arguments=tuple(map(_shaped, c.op_buffers.arguments)),
                               results=tuple(map(_shaped, c.op_buffers.results)))
    if impl == "conditional_thunk":
        c = m.conditional_thunk
        return ConditionalThunk(**common, branches=tuple(map(_sequence, c.branch_sequences)),
                                branch_index_buffer=_slice(c.branch_index_buffer))
    if impl == "call_thunk":
        return CallThunk(**common, called_sequence=_sequence(m.call_thunk.called_sequence))
    if impl == "dot_thunk":
        d = m.dot_thunk
        return DotThunk(**common, dot_dimensions=_dot_dims(d.dot_dimensions), lhs=_shaped(d.lhs_buffer_shape),
                        rhs=_shaped(d.rhs_buffer_shape), out=_shaped(d.out_buffer_shape))
    if impl == "convolution_thunk":
        c = m.convolution_thunk
        return ConvolutionThunk(**common, dimension_numbers=_conv_dims(c.dimension_numbers),
                                window=_window(c.window), feature_group_count=c.feature_group_count,
                                input=_shaped(c.input_buffer_shape), kernel=_shaped(c.kernel_buffer_shape),
                                output=_shaped(c.output_buffer_shape))
    return Thunk(**common)


# --- Constants

# Element type -> (LiteralProto field, numpy dtype of its repeated values; None: raw LE bytes).
_LITERAL_FIELDS: dict[str, tuple[str, str | None]] = {
    "pred": ("preds", "u1"), "s32": ("s32s", "<i4"), "s64": ("s64s", "<i8"), "u32": ("u32s", "<u4"),
    "u64": ("u64s", "<u8"), "f32": ("f32s", "<f4"), "f64": ("f64s", "<f8"), "c64": ("c64s", "<f4"),
    "c128": ("c128s", "<f8"), "s8": ("s8s", None), "u8": ("u8s", None), "s16": ("s16s", None),
    "u16": ("u16s", None), "f16": ("f16s", None), "bf16": ("bf16s", None),
    **{t: (t + "s", None) for t in ("f8e5m2", "f8e4m3fn", "f8e4m3b11fnuz", "f8e5m2fnuz", "f8e4m3fnuz",
                                    "f8e4m3", "f8e3m4", "f8e8m0fnu")},
}


def _literal_bytes(lit: pb.LiteralProto, target_m2m: tuple[int, ...] | None) -> bytes | None:
    """The literal's array bytes laid out in `target_m2m` (None: no whole-byte array value)."""
    shape = _shape(lit.shape)
    entry = _LITERAL_FIELDS.get(shape.dtype)
    if entry is None:
        return None
    name, dtype = entry
    values = getattr(lit, name)
    data = bytes(values) if dtype is None else np.array(values, dtype=dtype).tobytes()
    src, eb = shape.minor_to_major, PRIMITIVE_TYPES[shape.element_type][1]
    n = int(np.prod(shape.dims, dtype=np.int64))
    # layout assignment may give the buffer another layout than the literal's (a transpose)
    if (len(shape.dims) > 1 and src is not None and target_m2m is not None
            and tuple(src) != tuple(target_m2m) and len(data) == eb * n):
        src_major = list(reversed(src))  # physical axis k holds logical dimension src_major[k]
        arr = np.frombuffer(data, dtype=f"V{eb}").reshape([shape.dims[d] for d in src_major])
        logical = arr.transpose(np.argsort(src_major))
        data = np.ascontiguousarray(logical.transpose(list(reversed(target_m2m)))).tobytes()
    return data


@dataclass(frozen=True)
class Executable:
    allocations: tuple[Allocation, ...]
    thunks: tuple[Thunk, ...]
    constants: Mapping[int, bytes]  # constant allocation -> its whole contents
    missing_constants: tuple[int, ...] = ()  # constant allocations without a recoverable value

    def walk(self) -> Iterator[Thunk]:
        for t in self.thunks:
            yield from t.walk()

    def locate(self, instruction: str, index: tuple[int, ...] = ()) -> tuple[int, Value]:
        """(allocation, value) holding `instruction{index}`; KeyError if none does."""
        for a in self.allocations:
            for v in a.values:
                if v.instruction == instruction and v.index == index:
                    return a.index, v
        raise KeyError(f"{instruction}{{{','.join(map(str, index))}}}")


def _compilation_result(data: bytes) -> pb.CompilationResultProto:
    """Peel the IFRT header and the ExecutableAndOptionsProto."""
    length, pos, shift = 0, 0, 0
    while True:  # the header's varint length prefix: framing, not a protobuf message
        if pos >= len(data) or shift > 28:
            raise DecodeError("no IFRT header length at the start")
        b = data[pos]
        length, pos, shift = length | (b & 0x7F) << shift, pos + 1, shift + 7
        if b < 0x80:
            break
    if pos + length > len(data):
        raise DecodeError(f"the IFRT header ({length} bytes) runs past the end ({len(data)} bytes)")
    header, outer, result = pb.IfrtHeader(), pb.ExecutableAndOptionsProto(), pb.CompilationResultProto()
    for what, msg, raw in (("IFRT header", header, data[pos:pos + length]),
                           ("ExecutableAndOptionsProto", outer, data[pos + length:])):
        try:
            msg.ParseFromString(raw)
        except _ProtobufDecodeError:
            raise DecodeError(f"the {what} is truncated or garbled") from None
    if not header.serialization_kind.startswith("pjrt"):
        raise DecodeError(f"the IFRT header names {header.serialization_kind!r}, not a PjRt executable")
    try:
        result.ParseFromString(outer.serialized_executable)
    except _ProtobufDecodeError:
        raise DecodeError("the CompilationResultProto is truncated or garbled") from None
    if result.obj_files_kind != pb.CompilationResultProto.KERNELS:
        raise DecodeError("not a thunk-runtime executable (XLA:CPU's obj_files_kind is not KERNELS)")
    if not result.hlo_module.hlo_module.computations or not result.buffer_assignment.buffer_allocations:
        raise DecodeError("the CompilationResultProto has no HLO module or no buffer assignment")
    return result


def decode_executable(data: bytes) -> Executable:
    """Decode the bytes of ``serialize()``; DecodeError (one line) if they are not such bytes."""
    result = _compilation_result(bytes(data))
    instructions = {i.id: i for c in result.hlo_module.hlo_module.computations for i in c.instructions}
    ba = result.buffer_assignment
    # logical buffer id -> (instruction id, instruction name, shape index)
    logical = {}
    for lb in ba.logical_buffers:
        at = lb.defined_at
        ins = instructions.get(at.instruction_id)
        logical[lb.id] = (at.instruction_id, ins.name if ins else at.instruction_name, tuple(at.shape_index))
    allocations, defining = [], {}
    for a in sorted(ba.buffer_allocations, key=lambda a: a.index):
        values = []
        for asg in a.assigned:
            iid, name, index = logical.get(asg.logical_buffer_id, (-1, "", ()))
            values.append(Value(name, index, asg.offset, asg.size))
            defining[(a.index, len(values) - 1)] = iid
        kind = _kind(a)
        allocations.append(Allocation(a.index, a.size, kind, a.parameter_number if kind == "parameter" else None,
                                      tuple(values)))
    if [a.index for a in allocations] != list(range(len(allocations))):
        raise DecodeError("the buffer allocations are not numbered 0..n-1")

    constants, missing = {}, []
    for a in allocations:
        if a.kind != "constant":
            continue
        buf = bytearray(a.size)
        for j, v in enumerate(a.values):
            ins = instructions.get(defining[(a.index, j)])
            data_ = None
            if ins is not None and ins.HasField("literal") and not v.index:
                data_ = _literal_bytes(ins.literal, _shape(ins.shape).minor_to_major)
            if data_ is None or len(data_) != v.size or v.offset + v.size > a.size:
                missing.append(a.index)
                break
            buf[v.offset:v.offset + v.size] = data_
        else:
            if a.values:
                constants[a.index] = bytes(buf)
            else:
                missing.append(a.index)
    return Executable(tuple(allocations), _sequence(result.thunk_sequence), constants, tuple(missing))


def serialize(compiled) -> bytes:
    """Serialized executable of a ``jax.jit(f).lower(...).compile()`` result."""
    exe = compiled.runtime_executable()
    return bytes(exe.client.serialize_executable(exe))
