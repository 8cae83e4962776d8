"""Decode the serialized XLA:CPU (thunk runtime) executable that jax produces.

Why: XLA's text dumps are for humans; the serialized executable holds the same
facts (buffer assignment, thunk sequence, constant literals) in a machine form
that is stable per jax version.  No protobuf schema package is available, so
this module carries a ~100-line wire-format reader plus the field numbers of the
few messages we need, each checked against bytes from jax/jaxlib 0.10.2.

Layers, outermost first (as produced by
``client.serialize_executable(compiled.runtime_executable())`` on CPU):

1. IFRT envelope: ``varint(len) + header`` where the header is a small proto
   (1: version=3, 2: "pjrt_ifrt", 5: per-output dtype/memory kind, 6: per-output
   layouts, 7: module name).  The rest of the buffer, without a length prefix, is
2. ``xla.ExecutableAndOptionsProto``: 1: serialized executable (bytes),
   2: CompileOptionsProto.  Field 1 is
3. ``xla.cpu.CompilationResultProto``: 1: HloModuleProtoWithConfig,
   2: BufferAssignmentProto, 5: obj_files_kind (2 = KERNELS),
   6: ThunkSequenceProto, 7: compiled symbols, 8: object files
   ({1: ELF bytes, 2: name}; newer than the public proto's ``bytes obj_files = 4``),
   9: target machine ({1: triple, 2: cpu, 3: features}), 10: LLVM data layout.

``decode_executable`` also accepts layer 2 or layer 3 directly.

Constants: the thunk runtime does not store constant buffer contents as such;
it rebuilds them at load time from the HLO module's ``constant`` instructions.
So constant allocation bytes come from HloInstructionProto.literal (field 8),
matched through BufferAssignment logical buffers (defined_at.instruction_id).
Constants that were fused into a kernel are baked into the kernel's code (the
IR has them as private globals) and have no allocation at all.

Usage: ``python -m specializer.xla_executable FILE.bin`` prints the tree.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from typing import Iterator, Mapping

import numpy as np

# ----------------------------------------------------------------------------
# Protobuf wire format
# ----------------------------------------------------------------------------

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class DecodeError(ValueError):
    """The bytes are not the executable layout this module knows."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 70:
            raise DecodeError("varint too long")


def _signed64(v: int) -> int:
    # int64 fields are varints of the two's complement (negative = 10 bytes).
    return v - (1 << 64) if v >= (1 << 63) else v


class _Msg:
    """One parsed message: field number -> list of (wire type, raw value).

    Values are ints for varints, bytes for everything else.  Accessors
    interpret them; a missing field yields the proto3 default.
    """

    __slots__ = ("fields", "data")

    def __init__(self, data: bytes):
        self.data = bytes(data)
        self.fields: dict[int, list[tuple[int, int | bytes]]] = {}
        buf, pos, n = self.data, 0, len(self.data)
        while pos < n:
            key, pos = _varint(buf, pos)
            num, wt = key >> 3, key & 7
            if num == 0:
                raise DecodeError("field number 0")
            if wt == _VARINT:
                val, pos = _varint(buf, pos)
            elif wt == _I64:
                val, pos = buf[pos:pos + 8], pos + 8
            elif wt == _I32:
                val, pos = buf[pos:pos + 4], pos + 4
            elif wt == _LEN:
                ln, pos = _varint(buf, pos)
                val, pos = buf[pos:pos + ln], pos + ln
            else:  # groups (3/4) are not used by XLA protos
                raise DecodeError(f"unsupported wire type {wt}")
            if pos > n:
                raise DecodeError("truncated field")
            self.fields.setdefault(num, []).append((wt, val))

    def has(self, num: int) -> bool:
        return num in self.fields

    def int(self, num: int, default: int = 0) -> int:
        vals = self.ints(num)
        return vals[-1] if vals else default  # last one wins, as in protobuf

    def bool(self, num: int) -> bool:
        return bool(self.int(num))

    def ints(self, num: int) -> list[int]:
        """Repeated (packed or not) int64/int32/bool/enum field."""
        out: list[int] = []
        for wt, val in self.fields.get(num, ()):
            if wt == _VARINT:
                out.append(_signed64(val))
            elif wt == _LEN:
                pos = 0
                while pos < len(val):
                    v, pos = _varint(val, pos)
                    out.append(_signed64(v))
            else:
                raise DecodeError(f"field {num}: expected varint, wire type {wt}")
        return out

    def fixed(self, num: int, fmt: str) -> list:
        """Repeated fixed32/fixed64/float/double, packed or not."""
        size = struct.calcsize("<" + fmt)
        out: list = []
        for wt, val in self.fields.get(num, ()):
            if wt in (_I32, _I64, _LEN) and len(val) % size == 0:
                out.extend(x[0] for x in struct.iter_unpack("<" + fmt, val))
            else:
                raise DecodeError(f"field {num}: bad fixed-width payload")
        return out

    def bytes(self, num: int) -> bytes:
        vals = [v for wt, v in self.fields.get(num, ()) if wt == _LEN]
        return vals[-1] if vals else b""

    def str(self, num: int) -> str:
        return self.bytes(num).decode("utf-8", "replace")

    def strs(self, num: int) -> list[str]:
        return [v.decode("utf-8", "replace") for wt, v in self.fields.get(num, ()) if wt == _LEN]

    def msgs(self, num: int) -> list[_Msg]:
        return [_Msg(v) for wt, v in self.fields.get(num, ()) if wt == _LEN]

    def msg(self, num: int) -> _Msg | None:
        vals = self.msgs(num)
        return vals[-1] if vals else None

    def raw(self) -> dict[int, object]:
        """Schema-less view: field -> value (list if repeated).  Nested
        messages are left as bytes; callers wanting more use _Msg(bytes)."""
        out: dict[int, object] = {}
        for num, vals in sorted(self.fields.items()):
            conv = [_signed64(v) if wt == _VARINT else v for wt, v in vals]
            out[num] = conv[0] if len(conv) == 1 else tuple(conv)
        return out


def _try_msg(data: bytes) -> _Msg | None:
    try:
        return _Msg(data)
    except DecodeError:
        return None


# ----------------------------------------------------------------------------
# xla_data.proto: PrimitiveType, ShapeProto, LiteralProto
# ----------------------------------------------------------------------------

PRIMITIVE_TYPES: dict[int, str] = {
    0: "invalid", 1: "pred", 30: "s1", 26: "s2", 21: "s4", 2: "s8", 3: "s16",
    4: "s32", 5: "s64", 31: "u1", 27: "u2", 22: "u4", 6: "u8", 7: "u16",
    8: "u32", 9: "u64", 10: "f16", 11: "f32", 16: "bf16", 12: "f64",
    19: "f8e5m2", 28: "f8e4m3", 20: "f8e4m3fn", 23: "f8e4m3b11fnuz",
    29: "f8e3m4", 24: "f8e5m2fnuz", 25: "f8e4m3fnuz", 32: "f4e2m1fn",
    33: "f8e8m0fnu", 15: "c64", 18: "c128", 13: "tuple", 14: "opaque",
    17: "token", 34: "buffer",
}

# Bytes per element (None: sub-byte or non-array).
_ELEMENT_BYTES: dict[str, int] = {
    "pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8,
    "c128": 16, "f8e5m2": 1, "f8e4m3": 1, "f8e4m3fn": 1, "f8e4m3b11fnuz": 1,
    "f8e3m4": 1, "f8e5m2fnuz": 1, "f8e4m3fnuz": 1, "f8e8m0fnu": 1,
}


@dataclass(frozen=True)
class Shape:
    """ShapeProto: 2 element_type, 3 dimensions, 4 tuple_shapes, 5 layout
    (LayoutProto 1 = minor_to_major), 6 is_dynamic_dimension."""

    element_type: int
    dims: tuple[int, ...] = ()
    tuple_shapes: tuple["Shape", ...] = ()
    minor_to_major: tuple[int, ...] | None = None  # None: no layout in the proto

    @property
    def dtype(self) -> str:
        return PRIMITIVE_TYPES.get(self.element_type, f"type{self.element_type}")

    @property
    def is_tuple(self) -> bool:
        return self.element_type == 13

    @property
    def num_elements(self) -> int:
        return int(np.prod(self.dims, dtype=np.int64)) if self.dims else 1

    @property
    def byte_size(self) -> int | None:
        """Dense array size in bytes (None for tuples/sub-byte types)."""
        eb = _ELEMENT_BYTES.get(self.dtype)
        return None if eb is None else eb * self.num_elements

    def __str__(self) -> str:
        if self.is_tuple:
            return "(" + ", ".join(map(str, self.tuple_shapes)) + ")"
        s = f"{self.dtype}[{','.join(map(str, self.dims))}]"
        if self.minor_to_major is not None and len(self.dims) > 1:
            s += "{" + ",".join(map(str, self.minor_to_major)) + "}"
        return s


def _shape(m: _Msg | None) -> Shape | None:
    if m is None:
        return None
    layout = m.msg(5)
    return Shape(
        element_type=m.int(2),
        dims=tuple(m.ints(3)),
        tuple_shapes=tuple(_shape(t) for t in m.msgs(4)),
        minor_to_major=tuple(layout.ints(1)) if layout is not None else None,
    )


# LiteralProto field holding each element type's values and how to read them.
# ("v", dtype): repeated varint; ("f", fmt): packed fixed; ("b", None): raw LE bytes.
_LITERAL_FIELDS: dict[str, tuple[int, str, str | None]] = {
    "pred": (2, "v", "u1"), "s8": (15, "b", None), "u8": (3, "b", None),
    "s16": (17, "b", None), "u16": (16, "b", None), "f16": (11, "b", None),
    "bf16": (13, "b", None), "s32": (4, "v", "<i4"), "s64": (5, "v", "<i8"),
    "u32": (6, "v", "<u4"), "u64": (7, "v", "<u8"), "f32": (8, "f", "f"),
    "f64": (9, "f", "d"), "c64": (12, "f", "f"), "c128": (18, "f", "d"),
    "f8e5m2": (19, "b", None), "f8e4m3": (28, "b", None), "f8e4m3fn": (20, "b", None),
    "f8e4m3b11fnuz": (23, "b", None), "f8e3m4": (29, "b", None),
    "f8e5m2fnuz": (24, "b", None), "f8e4m3fnuz": (25, "b", None),
    "f8e8m0fnu": (33, "b", None),
    # Sub-byte types: stored one element per byte in the proto; returned as-is.
    "s1": (30, "b", None), "s2": (26, "b", None), "s4": (21, "b", None),
    "u1": (31, "b", None), "u2": (27, "b", None), "u4": (22, "b", None),
    "f4e2m1fn": (32, "b", None),
}


def _literal_bytes(lit: _Msg, target_m2m: tuple[int, ...] | None) -> bytes | None:
    """Little-endian array bytes of a LiteralProto, laid out in target_m2m
    (the allocation's layout).  None if the literal is a tuple/unsupported."""
    shape = _shape(lit.msg(1))
    if shape is None or shape.is_tuple:
        return None
    entry = _LITERAL_FIELDS.get(shape.dtype)
    if entry is None:
        return None
    num, how, fmt = entry
    if how == "v":
        vals = lit.ints(num)
        if fmt == "<u8" or fmt == "<u4":
            vals = [v & ((1 << 64) - 1) for v in vals]
        data = np.array(vals, dtype=np.dtype(fmt).newbyteorder("<") if fmt != "u1" else np.uint8).tobytes()
    elif how == "f":
        # Packed fixed-width payloads already are little-endian arrays.
        data = struct.pack(f"<{len(vals)}{fmt}", *vals) if (vals := lit.fixed(num, fmt)) else b""
    else:
        data = lit.bytes(num)
    # Re-layout when literal and buffer layouts differ (e.g. a transposed layout
    # chosen by layout assignment).  Only for whole-byte element types.
    src = shape.minor_to_major
    rank = len(shape.dims)
    eb = _ELEMENT_BYTES.get(shape.dtype)
    if (rank > 1 and eb and src is not None and target_m2m is not None
            and tuple(src) != tuple(target_m2m) and len(data) == eb * shape.num_elements):
        arr = np.frombuffer(data, dtype=np.dtype(f"V{eb}"))
        src_major = list(reversed(src))  # physical axis k holds logical dim src_major[k]
        arr = arr.reshape([shape.dims[d] for d in src_major])
        logical = arr.transpose(np.argsort(src_major))
        data = np.ascontiguousarray(logical.transpose(list(reversed(target_m2m)))).tobytes()
    return data


# ----------------------------------------------------------------------------
# Buffer assignment (hlo.proto BufferAssignmentProto)
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Slice:
    """BufferAllocationSliceProto: 1 offset, 2 size, 3 buffer_allocation_index,
    4 element_type (present in 0.10.2, not in older public protos)."""

    allocation: int
    offset: int
    size: int
    element_type: int | None = None

    def __str__(self) -> str:
        return f"alloc{self.allocation}[{self.offset}:+{self.size}]"


def _slice(m: _Msg | None) -> Slice | None:
    if m is None:
        return None
    return Slice(allocation=m.int(3), offset=m.int(1), size=m.int(2),
                 element_type=m.int(4) if m.has(4) else None)


@dataclass(frozen=True)
class ShapedSlice:
    """A buffer slice plus the shape of the value in it (shape may be None)."""

    slice: Slice
    shape: Shape | None

    def __str__(self) -> str:
        return f"{self.slice} {self.shape}" if self.shape is not None else str(self.slice)


def _shaped_slice_sb(m: _Msg | None) -> ShapedSlice | None:
    # ShapeBufferAllocationSliceProto: 1 shape, 2 slice.
    if m is None:
        return None
    return ShapedSlice(slice=_slice(m.msg(2)) or Slice(0, 0, 0), shape=_shape(m.msg(1)))


def _shaped_slice_gpu(m: _Msg) -> ShapedSlice:
    # xla.gpu.ShapedSliceProto (kernel args): 1 slice, 2 shape -- order swapped.
    return ShapedSlice(slice=_slice(m.msg(1)) or Slice(0, 0, 0), shape=_shape(m.msg(2)))


@dataclass(frozen=True)
class LogicalValue:
    """A logical buffer (HLO value) assigned into an allocation."""

    instruction: str  # HLO instruction name ("" if unknown)
    instruction_id: int
    shape_index: tuple[int, ...]
    offset: int
    size: int
    element_type: int | None = None  # Assigned.4, seen in 0.10.2


@dataclass(frozen=True)
class Allocation:
    """BufferAllocationProto: 1 index, 2 size, 3 is_thread_local, 5
    is_entry_computation_parameter, 6 parameter_number, 7 maybe_live_out,
    8 color, 9 assigned, 10 parameter_shape_index, 11 is_tuple, 12 is_constant."""

    index: int
    size: int
    # "parameter" | "constant" | "thread_local" | "output" (maybe-live-out) |
    # "temp" (XLA's "preallocated-temp"); first matching flag wins, in this order.
    kind: str
    parameter_number: int | None = None
    parameter_shape_index: tuple[int, ...] = ()
    maybe_live_out: bool = False
    is_tuple: bool = False
    is_thread_local: bool = False
    color: int = 0
    values: tuple[LogicalValue, ...] = ()


# ----------------------------------------------------------------------------
# Thunks (xla/backends/cpu/runtime/thunk.proto)
# ----------------------------------------------------------------------------

# ThunkProto oneof impl: field number -> case name.
THUNK_IMPLS: dict[int, str] = {
    3: "call_thunk", 4: "conditional_thunk", 5: "sort_thunk", 6: "xnn_fusion_thunk",
    7: "dot_thunk", 8: "rng_get_and_update_state_thunk", 9: "top_k_thunk",
    10: "while_thunk", 11: "kernel_thunk", 12: "copy_thunk", 13: "fft_thunk",
    14: "infeed_thunk", 15: "outfeed_thunk", 16: "custom_call_thunk",
    17: "convolution_thunk", 18: "collective_thunk", 19: "partition_id_thunk",
    20: "replica_id_thunk", 21: "ynn_fusion_thunk",
}


@dataclass(frozen=True, kw_only=True)
class Thunk:
    """Common part of every thunk.  Unknown/undecoded kinds are plain Thunk
    objects: ``kind`` (the runtime's kind string, e.g. "fft") and ``impl``
    (oneof case name, or "field<N>") still say what it is, and ``op_name``
    names the HLO instruction for an "unsupported op" error."""

    kind: str  # ThunkProto.kind, e.g. "kernel", "copy", "while", "ynn-fusion"
    impl: str  # oneof case, e.g. "kernel_thunk"; "field<N>" if unknown; "" if none
    impl_field: int  # oneof field number (0 if none)
    op_name: str  # InfoProto.op_name: HLO instruction name
    module_name: str = ""
    raw: Mapping[int, object] = field(default_factory=dict, compare=False, repr=False)

    def buffer_slices(self) -> tuple[Slice, ...]:
        """Every buffer slice this thunk itself touches (not nested ones)."""
        return ()

    def nested(self) -> tuple[tuple[str, tuple["Thunk", ...]], ...]:
        """Nested thunk sequences, labelled, in a stable order."""
        return ()

    def walk(self) -> Iterator["Thunk"]:
        """This thunk, then nested thunks depth-first."""
        yield self
        for _, seq in self.nested():
            for t in seq:
                yield from t.walk()


@dataclass(frozen=True, kw_only=True)
class KernelThunk(Thunk):
    """KernelThunkProto: 1 kernel_name, 2 num_workgroups{1 x,2 y,3 z},
    3 invariant_arguments, 4 min_alignment (Int64Optional), 5 arguments_buffers,
    6 results_buffers.  ``args`` (arguments then results) is exactly the
    XLA_CPU_KernelArg array of ``ptr @kernel(ptr %frame)`` (checked against
    the *.ir-no-opt.ll dumps)."""

    kernel_name: str
    num_workgroups: tuple[int, int, int]
    arguments: tuple[ShapedSlice, ...]
    results: tuple[ShapedSlice, ...]
    invariant_arguments: tuple[int, ...] = ()
    min_alignment: int | None = None

    @property
    def args(self) -> tuple[ShapedSlice, ...]:
        return self.arguments + self.results

    def buffer_slices(self):
        return tuple(a.slice for a in self.args)


@dataclass(frozen=True, kw_only=True)
class CopyThunk(Thunk):
    """CopyThunkProto: 1 src, 2 dst (ShapeBufferAllocationSliceProto)."""

    src: ShapedSlice
    dst: ShapedSlice

    def buffer_slices(self):
        return (self.src.slice, self.dst.slice)


@dataclass(frozen=True, kw_only=True)
class WhileThunk(Thunk):
    """WhileThunkProto: 1 cond_sequence, 2 body_sequence, 3 trip_count
    (Int64Optional: 1 value, 2 contains_value), 4 cond_buffer (pred)."""

    cond_buffer: Slice
    cond_sequence: tuple[Thunk, ...]
    body_sequence: tuple[Thunk, ...]
    trip_count: int | None = None

    def buffer_slices(self):
        return (self.cond_buffer,)

    def nested(self):
        return (("cond", self.cond_sequence), ("body", self.body_sequence))


@dataclass(frozen=True, kw_only=True)
class ConditionalThunk(Thunk):
    """ConditionalThunkProto: 1 branch_sequences, 2 branch_index_buffer.
    The buffer holds an s32 branch index (jax's lax.cond converts its
    predicate, so branch0 is the false branch) or, for pred-form HLO
    conditionals, a pred where true selects branch0."""

    branch_index_buffer: Slice
    branches: tuple[tuple[Thunk, ...], ...]

    def buffer_slices(self):
        return (self.branch_index_buffer,)

    def nested(self):
        return tuple((f"branch{i}", b) for i, b in enumerate(self.branches))


@dataclass(frozen=True, kw_only=True)
class CallThunk(Thunk):
    """CallThunkProto: 1 called_sequence."""

    called_sequence: tuple[Thunk, ...]

    def nested(self):
        return (("called", self.called_sequence),)


@dataclass(frozen=True, kw_only=True)
class DotThunk(Thunk):
    """DotThunkProto: 1 dot_dimensions, 2 lhs, 3 rhs, 4 out."""

    dot_dimensions: Mapping[str, tuple[int, ...]]
    lhs: ShapedSlice
    rhs: ShapedSlice
    out: ShapedSlice

    def buffer_slices(self):
        return (self.lhs.slice, self.rhs.slice, self.out.slice)


@dataclass(frozen=True, kw_only=True)
class ConvolutionThunk(Thunk):
    """ConvolutionThunkProto: 1 dimension_numbers, 2 window,
    3 feature_group_count, 4 input, 5 kernel, 6 output, 7 options."""

    dimension_numbers: Mapping[str, object]
    window: tuple[Mapping[str, object], ...]
    feature_group_count: int
    input: ShapedSlice
    kernel: ShapedSlice
    output: ShapedSlice
    multi_threaded: bool = False

    def buffer_slices(self):
        return (self.input.slice, self.kernel.slice, self.output.slice)


@dataclass(frozen=True, kw_only=True)
class SortThunk(Thunk):
    """SortThunkProto: 1 dimension, 2 is_stable, 3 direction (optional enum),
    4 comparator_name (a kernel symbol), 5 inputs (sorted in place)."""

    dimension: int
    is_stable: bool
    direction: str | None
    comparator_name: str
    inputs: tuple[ShapedSlice, ...]

    def buffer_slices(self):
        return tuple(s.slice for s in self.inputs)


@dataclass(frozen=True, kw_only=True)
class CustomCallThunk(Thunk):
    """CustomCallThunkProto: 1 api_version, 2 target_name, 3 backend_config,
    4 op_buffers{1 arguments, 2 results}."""

    target_name: str
    api_version: int
    backend_config: str
    arguments: tuple[ShapedSlice, ...]
    results: tuple[ShapedSlice, ...]

    def buffer_slices(self):
        return tuple(s.slice for s in self.arguments + self.results)


@dataclass(frozen=True, kw_only=True)
class FusionLibraryThunk(Thunk):
    """XNNPACK / YNNPACK fusion (a library-executed fused dot/conv/elementwise
    region).  YnnFusionThunkProto: 1 options, 2 instruction_id, 3 arguments,
    4 results.  XnnFusionThunkProto: 1 options, oneof 2 dot / 3 conv /
    4 fusion{1 arguments, 2 results}."""

    library: str  # "ynn" | "xnn"
    arguments: tuple[ShapedSlice, ...]
    results: tuple[ShapedSlice, ...]
    instruction_id: int | None = None
    details: Mapping[str, object] = field(default_factory=dict)

    def buffer_slices(self):
        return tuple(s.slice for s in self.arguments + self.results)


@dataclass(frozen=True, kw_only=True)
class TopKThunk(Thunk):
    """TopKThunkProto: 1 batch_size, 2 input_size, 3 k, 4 values, 5 output,
    6 indices (plain slices)."""

    batch_size: int
    input_size: int
    k: int
    values: Slice
    output: Slice
    indices: Slice

    def buffer_slices(self):
        return (self.values, self.output, self.indices)


@dataclass(frozen=True, kw_only=True)
class FftThunk(Thunk):
    """FftThunkProto: 1 is_multi_thread_eigen, 2 fft_type, 3 fft_length,
    4 input, 5 output."""

    fft_type: int
    fft_length: tuple[int, ...]
    input: ShapedSlice
    output: ShapedSlice

    def buffer_slices(self):
        return (self.input.slice, self.output.slice)


@dataclass(frozen=True, kw_only=True)
class BuffersThunk(Thunk):
    """Kinds decoded only to their buffer slices: rng-get-and-update-state,
    partition-id, replica-id, infeed, outfeed, collectives.  Details in raw."""

    sources: tuple[ShapedSlice, ...] = ()
    destinations: tuple[ShapedSlice, ...] = ()

    def buffer_slices(self):
        return tuple(s.slice for s in self.sources + self.destinations)


def _dot_dims(m: _Msg | None) -> dict[str, tuple[int, ...]]:
    # DotDimensionNumbers: 1 lhs_contracting, 2 rhs_contracting, 3 lhs_batch, 4 rhs_batch.
    m = m or _Msg(b"")
    return {"lhs_contracting": tuple(m.ints(1)), "rhs_contracting": tuple(m.ints(2)),
            "lhs_batch": tuple(m.ints(3)), "rhs_batch": tuple(m.ints(4))}


def _conv_dims(m: _Msg | None) -> dict[str, object]:
    # ConvolutionDimensionNumbers (xla_data.proto).
    m = m or _Msg(b"")
    return {"input_batch": m.int(7), "input_feature": m.int(8),
            "input_spatial": tuple(m.ints(11)),
            "kernel_input_feature": m.int(3), "kernel_output_feature": m.int(4),
            "kernel_spatial": tuple(m.ints(6)),
            "output_batch": m.int(9), "output_feature": m.int(10),
            "output_spatial": tuple(m.ints(12))}


def _window(m: _Msg | None) -> tuple[dict[str, object], ...]:
    # Window: 1 dimensions (WindowDimension: 1 size, 2 stride, 3 padding_low,
    # 4 padding_high, 5 window_dilation, 6 base_dilation, 7 window_reversal).
    if m is None:
        return ()
    return tuple({"size": d.int(1), "stride": d.int(2), "padding_low": d.int(3),
                  "padding_high": d.int(4), "window_dilation": d.int(5),
                  "base_dilation": d.int(6), "window_reversal": d.bool(7)}
                 for d in m.msgs(1))


def _optional_int(m: _Msg | None) -> int | None:
    # Int64Optional / SortDirectionOptional: 1 value, 2 contains_value.
    if m is None or not m.bool(2):
        return None
    return m.int(1)


_SORT_DIRECTIONS = {0: "unknown", 1: "ascending", 2: "descending"}


def _sequence(m: _Msg | None) -> tuple[Thunk, ...]:
    # ThunkSequenceProto: 1 thunks, 2 thunk_resources (ignored).
    if m is None:
        return ()
    return tuple(_thunk(t) for t in m.msgs(1))


def _thunk(m: _Msg) -> Thunk:
    info = m.msg(2) or _Msg(b"")  # InfoProto: 1 op_name, 2 module_name, 3 module_id
    impl_fields = [n for n in m.fields if n not in (1, 2)]
    impl_field = impl_fields[0] if impl_fields else 0
    common = dict(
        kind=m.str(1),
        impl=THUNK_IMPLS.get(impl_field, f"field{impl_field}") if impl_field else "",
        impl_field=impl_field,
        op_name=info.str(1),
        module_name=info.str(2),
        raw=m.raw(),
    )
    p = m.msg(impl_field) if impl_field else None
    if p is None:
        return Thunk(**common)
    empty = ShapedSlice(Slice(0, 0, 0), None)
    ss = lambda n: _shaped_slice_sb(p.msg(n)) or empty  # noqa: E731
    if impl_field == 11:
        nwg = p.msg(2) or _Msg(b"")
        return KernelThunk(
            **common, kernel_name=p.str(1),
            num_workgroups=(nwg.int(1, 1) if nwg.has(1) else 1,
                            nwg.int(2, 1) if nwg.has(2) else 1,
                            nwg.int(3, 1) if nwg.has(3) else 1),
            invariant_arguments=tuple(p.ints(3)),
            min_alignment=_optional_int(p.msg(4)),
            arguments=tuple(_shaped_slice_gpu(a) for a in p.msgs(5)),
            results=tuple(_shaped_slice_gpu(a) for a in p.msgs(6)))
    if impl_field == 12:
        return CopyThunk(**common, src=ss(1), dst=ss(2))
    if impl_field == 10:
        return WhileThunk(**common, cond_sequence=_sequence(p.msg(1)),
                          body_sequence=_sequence(p.msg(2)),
                          trip_count=_optional_int(p.msg(3)),
                          cond_buffer=_slice(p.msg(4)) or Slice(0, 0, 0))
    if impl_field == 4:
        return ConditionalThunk(**common,
                                branches=tuple(_sequence(b) for b in p.msgs(1)),
                                branch_index_buffer=_slice(p.msg(2)) or Slice(0, 0, 0))
    if impl_field == 3:
        return CallThunk(**common, called_sequence=_sequence(p.msg(1)))
    if impl_field == 7:
        return DotThunk(**common, dot_dimensions=_dot_dims(p.msg(1)),
                        lhs=ss(2), rhs=ss(3), out=ss(4))
    if impl_field == 17:
        opts = p.msg(7)
        return ConvolutionThunk(**common, dimension_numbers=_conv_dims(p.msg(1)),
                                window=_window(p.msg(2)), feature_group_count=p.int(3),
                                input=ss(4), kernel=ss(5), output=ss(6),
                                multi_threaded=bool(opts and opts.bool(1)))
    if impl_field == 5:
        d = _optional_int(p.msg(3))
        return SortThunk(**common, dimension=p.int(1), is_stable=p.bool(2),
                         direction=None if d is None else _SORT_DIRECTIONS.get(d, str(d)),
                         comparator_name=p.str(4),
                         inputs=tuple(_shaped_slice_sb(x) for x in p.msgs(5)))
    if impl_field == 16:
        ob = p.msg(4) or _Msg(b"")
        return CustomCallThunk(**common, api_version=p.int(1), target_name=p.str(2),
                               backend_config=p.str(3),
                               arguments=tuple(_shaped_slice_sb(x) for x in ob.msgs(1)),
                               results=tuple(_shaped_slice_sb(x) for x in ob.msgs(2)))
    if impl_field == 21:
        return FusionLibraryThunk(**common, library="ynn", instruction_id=p.int(2),
                                  arguments=tuple(_shaped_slice_sb(x) for x in p.msgs(3)),
                                  results=tuple(_shaped_slice_sb(x) for x in p.msgs(4)),
                                  details={"options": p.msg(1).raw() if p.has(1) else {}})
    if impl_field == 6:
        details: dict[str, object] = {"options": p.msg(1).raw() if p.has(1) else {}}
        args: tuple[ShapedSlice, ...] = ()
        res: tuple[ShapedSlice, ...] = ()
        if p.has(2) or p.has(3):  # XnnDot / XnnConvolution
            q = p.msg(2) or p.msg(3)
            if p.has(2):
                details["dot_dimensions"] = _dot_dims(q.msg(1))
            else:
                details.update(dimension_numbers=_conv_dims(q.msg(1)), window=_window(q.msg(2)),
                               feature_group_count=q.int(3))
            sl = [_shaped_slice_sb(q.msg(n)) or empty for n in ((2, 3, 4) if p.has(2) else (4, 5, 6))]
            args, res = tuple(sl[:2]), (sl[2],)
        elif p.has(4):
            q = p.msg(4)
            args = tuple(_shaped_slice_sb(x) for x in q.msgs(1))
            res = tuple(_shaped_slice_sb(x) for x in q.msgs(2))
        return FusionLibraryThunk(**common, library="xnn", arguments=args, results=res,
                                  details=details)
    if impl_field == 9:
        return TopKThunk(**common, batch_size=p.int(1), input_size=p.int(2), k=p.int(3),
                         values=_slice(p.msg(4)) or Slice(0, 0, 0),
                         output=_slice(p.msg(5)) or Slice(0, 0, 0),
                         indices=_slice(p.msg(6)) or Slice(0, 0, 0))
    if impl_field == 13:
        return FftThunk(**common, fft_type=p.int(2), fft_length=tuple(p.ints(3)),
                        input=ss(4), output=ss(5))
    if impl_field == 8:  # rng state: 1 delta, 2 state_buffer
        st = ShapedSlice(_slice(p.msg(2)) or Slice(0, 0, 0), None)
        return BuffersThunk(**common, sources=(st,), destinations=(st,))
    if impl_field in (19, 20):  # partition/replica id: 1 logical_id_buffer
        return BuffersThunk(**common, destinations=(ShapedSlice(_slice(p.msg(1)) or Slice(0, 0, 0), None),))
    if impl_field in (14, 15):  # infeed/outfeed: 2 buffers
        bufs = tuple(_shaped_slice_sb(x) for x in p.msgs(2))
        return BuffersThunk(**common, **({"destinations": bufs} if impl_field == 14 else {"sources": bufs}))
    if impl_field == 18:  # collective: 2 op_buffers{1 sources, 2 destinations}
        ob = p.msg(2) or _Msg(b"")
        return BuffersThunk(**common, sources=tuple(_shaped_slice_sb(x) for x in ob.msgs(1)),
                            destinations=tuple(_shaped_slice_sb(x) for x in ob.msgs(2)))
    return Thunk(**common)


# ----------------------------------------------------------------------------
# HLO module (hlo.proto) -- only what we need: names, ids, shapes, literals
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class HloInstruction:
    """HloInstructionProto: 1 name, 2 opcode, 3 shape, 8 literal,
    9 parameter_number, 35 id."""

    id: int
    name: str
    opcode: str
    computation: str
    shape: Shape | None
    parameter_number: int = 0


@dataclass(frozen=True)
class Symbol:
    """CompilationResultProto.compiled_symbols: 1 type_id, 2 name."""

    type_id: int
    name: str


@dataclass(frozen=True)
class ObjectFile:
    """CompilationResultProto field 8 (0.10.2): 1 ELF bytes, 2 name."""

    name: str
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class Executable:
    module_name: str
    allocations: tuple[Allocation, ...]
    thunks: tuple[Thunk, ...]
    # Allocation index -> the allocation's full contents (constant allocations).
    constants: Mapping[int, bytes]
    # Constant allocations whose values could not be recovered (expected empty).
    missing_constants: tuple[int, ...] = ()
    parameter_shapes: tuple[Shape, ...] = ()
    result_shape: Shape | None = None
    instructions: Mapping[int, HloInstruction] = field(default_factory=dict, repr=False)
    symbols: tuple[Symbol, ...] = ()
    object_files: tuple[ObjectFile, ...] = field(default=(), repr=False)
    target_triple: str = ""
    target_cpu: str = ""
    data_layout: str = ""
    obj_files_kind: int = 0  # 1 CLASSIC, 2 KERNELS (thunk runtime)
    envelope: tuple[str, ...] = ()  # outer layers that were peeled, outermost first

    def walk(self) -> Iterator[Thunk]:
        for t in self.thunks:
            yield from t.walk()

    def allocation(self, index: int) -> Allocation:
        return self.allocations[index]


# ----------------------------------------------------------------------------
# Peeling and top-level decode
# ----------------------------------------------------------------------------


def _is_compilation_result(m: _Msg | None) -> bool:
    """Heuristic check for xla.cpu.CompilationResultProto: field 1 holds an
    HloModuleProtoWithConfig (whose 1 is an HloModuleProto with computations
    in 3) and field 2 a BufferAssignmentProto (allocations in 3)."""
    if m is None or not (m.has(1) and m.has(2)):
        return False
    try:
        hmc = m.msg(1)
        hm = hmc.msg(1) if hmc is not None else None
        ba = m.msg(2)
        return bool(hm is not None and hm.has(3) and ba is not None and ba.has(3))
    except DecodeError:
        return False


def _peel(data: bytes) -> tuple[_Msg, tuple[str, ...]]:
    # 1. IFRT: varint-length-prefixed header, then ExecutableAndOptionsProto.
    try:
        hlen, pos = _varint(data, 0)
        if 0 < hlen and pos + hlen < len(data):
            header = _try_msg(data[pos:pos + hlen])
            if header is not None and header.str(2).startswith("pjrt"):
                outer = _try_msg(data[pos + hlen:])
                inner = _try_msg(outer.bytes(1)) if outer is not None else None
                if _is_compilation_result(inner):
                    return inner, (f"ifrt-header({header.str(2)})", "ExecutableAndOptionsProto",
                                   "CompilationResultProto")
    except DecodeError:
        pass
    # 2. ExecutableAndOptionsProto without the IFRT header.
    outer = _try_msg(data)
    if outer is not None:
        inner = _try_msg(outer.bytes(1))
        if _is_compilation_result(inner):
            return inner, ("ExecutableAndOptionsProto", "CompilationResultProto")
    # 3. A bare CompilationResultProto.
    if _is_compilation_result(outer):
        return outer, ("CompilationResultProto",)
    raise DecodeError("not a serialized XLA:CPU executable (no CompilationResultProto found)")


def _allocation_kind(a: _Msg) -> str:
    if a.bool(5):
        return "parameter"
    if a.bool(12):
        return "constant"
    if a.bool(3):
        return "thread_local"
    if a.bool(7):
        return "output"
    return "temp"


def decode_executable(data: bytes) -> Executable:
    """Decode bytes from ``serialize()`` (or its inner layers)."""
    cr, envelope = _peel(bytes(data))

    # --- HLO module: instruction id -> instruction, plus constant literals.
    hmc = cr.msg(1)
    hm = hmc.msg(1) if hmc is not None else _Msg(b"")
    instructions: dict[int, HloInstruction] = {}
    literals: dict[int, _Msg] = {}
    for comp in hm.msgs(3):
        cname = comp.str(1)
        for ins in comp.msgs(2):
            iid = ins.int(35)
            instructions[iid] = HloInstruction(
                id=iid, name=ins.str(1), opcode=ins.str(2), computation=cname,
                shape=_shape(ins.msg(3)), parameter_number=ins.int(9))
            if ins.has(8):
                literals[iid] = ins.msg(8)
    ps = hm.msg(4)  # host_program_shape: 1 parameters, 2 result
    parameter_shapes = tuple(_shape(s) for s in ps.msgs(1)) if ps is not None else ()
    result_shape = _shape(ps.msg(2)) if ps is not None else None

    # --- Buffer assignment.
    ba = cr.msg(2)
    # LogicalBufferProto: 1 id, 2 size, 3 defined_at{2 name, 3 shape_index, 4 instruction_id}.
    logical: dict[int, tuple[str, int, tuple[int, ...]]] = {}
    for lb in ba.msgs(1):
        loc = lb.msg(3) or _Msg(b"")
        iid = loc.int(4)
        name = instructions[iid].name if iid in instructions else loc.str(2)
        logical[lb.int(1)] = (name, iid, tuple(loc.ints(3)))
    allocations = []
    for a in ba.msgs(3):
        values = []
        for asg in a.msgs(9):  # Assigned: 1 logical_buffer_id, 2 offset, 3 size, 4 element_type
            name, iid, sidx = logical.get(asg.int(1), ("", -1, ()))
            values.append(LogicalValue(instruction=name, instruction_id=iid, shape_index=sidx,
                                       offset=asg.int(2), size=asg.int(3),
                                       element_type=asg.int(4) if asg.has(4) else None))
        kind = _allocation_kind(a)
        allocations.append(Allocation(
            index=a.int(1), size=a.int(2), kind=kind,
            parameter_number=a.int(6) if kind == "parameter" else None,
            parameter_shape_index=tuple(a.ints(10)),
            maybe_live_out=a.bool(7), is_tuple=a.bool(11), is_thread_local=a.bool(3),
            color=a.int(8), values=tuple(values)))
    allocations.sort(key=lambda x: x.index)
    if [a.index for a in allocations] != list(range(len(allocations))):
        raise DecodeError("allocation indices are not 0..n-1")

    # --- Constants: literal of the defining `constant` instruction, placed at
    # the value's offset inside the allocation.
    constants: dict[int, bytes] = {}
    missing: list[int] = []
    for a in allocations:
        if a.kind != "constant":
            continue
        buf = bytearray(a.size)
        ok = bool(a.values)
        for v in a.values:
            lit = literals.get(v.instruction_id)
            ins = instructions.get(v.instruction_id)
            data_ = None
            if lit is not None and not v.shape_index:
                data_ = _literal_bytes(lit, ins.shape.minor_to_major if ins and ins.shape else None)
            if data_ is None or len(data_) != v.size or v.offset + v.size > a.size:
                ok = False
                break
            buf[v.offset:v.offset + v.size] = data_
        if ok:
            constants[a.index] = bytes(buf)
        else:
            missing.append(a.index)

    target = cr.msg(9) or _Msg(b"")
    return Executable(
        module_name=hm.str(1),
        allocations=tuple(allocations),
        thunks=_sequence(cr.msg(6)),
        constants=constants,
        missing_constants=tuple(missing),
        parameter_shapes=parameter_shapes,
        result_shape=result_shape,
        instructions=instructions,
        symbols=tuple(Symbol(s.int(1), s.str(2)) for s in cr.msgs(7)),
        object_files=tuple(ObjectFile(o.str(2), o.bytes(1)) for o in cr.msgs(8))
        + tuple(ObjectFile("", b) for _, b in cr.fields.get(4, ()) if isinstance(b, bytes)),
        target_triple=target.str(1),
        target_cpu=target.str(2),
        data_layout=cr.str(10),
        obj_files_kind=cr.int(5),
        envelope=envelope,
    )


def serialize(compiled) -> bytes:
    """Serialized executable of a ``jax.jit(f).lower(...).compile()`` result."""
    exe = compiled.runtime_executable()
    return bytes(exe.client.serialize_executable(exe))


# ----------------------------------------------------------------------------
# Readable dump
# ----------------------------------------------------------------------------


def _format_thunk(t: Thunk, indent: int, out: list[str]) -> None:
    pad = "  " * indent
    head = f"{pad}{t.kind or '?'} [{t.impl or 'no impl'}] op={t.op_name!r}"
    if isinstance(t, KernelThunk):
        out.append(f"{head} kernel={t.kernel_name} workgroups={t.num_workgroups}"
                   f" invariant={list(t.invariant_arguments)}")
        for i, a in enumerate(t.args):
            role = "arg" if i < len(t.arguments) else "res"
            out.append(f"{pad}    {role}{i}: {a}")
    elif isinstance(t, CopyThunk):
        out.append(f"{head} {t.src} -> {t.dst}")
    elif isinstance(t, WhileThunk):
        out.append(f"{head} cond_buffer={t.cond_buffer} trip_count={t.trip_count}")
    elif isinstance(t, ConditionalThunk):
        out.append(f"{head} branch_index={t.branch_index_buffer} branches={len(t.branches)}")
    elif isinstance(t, DotThunk):
        out.append(f"{head} {dict(t.dot_dimensions)}")
        out += [f"{pad}    {n}: {s}" for n, s in (("lhs", t.lhs), ("rhs", t.rhs), ("out", t.out))]
    elif isinstance(t, ConvolutionThunk):
        out.append(f"{head} groups={t.feature_group_count} dims={dict(t.dimension_numbers)}")
        out.append(f"{pad}    window={list(map(dict, t.window))}")
        out += [f"{pad}    {n}: {s}" for n, s in
                (("input", t.input), ("kernel", t.kernel), ("output", t.output))]
    elif isinstance(t, SortThunk):
        out.append(f"{head} dim={t.dimension} stable={t.is_stable} direction={t.direction}"
                   f" comparator={t.comparator_name}")
        out += [f"{pad}    in/out{i}: {s}" for i, s in enumerate(t.inputs)]
    elif isinstance(t, CustomCallThunk):
        out.append(f"{head} target={t.target_name} api={t.api_version}")
        out += [f"{pad}    arg{i}: {s}" for i, s in enumerate(t.arguments)]
        out += [f"{pad}    res{i}: {s}" for i, s in enumerate(t.results)]
    elif isinstance(t, FusionLibraryThunk):
        out.append(f"{head} library={t.library} instruction_id={t.instruction_id}")
        out += [f"{pad}    arg{i}: {s}" for i, s in enumerate(t.arguments)]
        out += [f"{pad}    res{i}: {s}" for i, s in enumerate(t.results)]
    elif isinstance(t, TopKThunk):
        out.append(f"{head} batch={t.batch_size} n={t.input_size} k={t.k}"
                   f" values={t.values} output={t.output} indices={t.indices}")
    elif isinstance(t, FftThunk):
        out.append(f"{head} fft_type={t.fft_type} fft_length={list(t.fft_length)}"
                   f" {t.input} -> {t.output}")
    elif type(t) is Thunk:
        out.append(f"{head} (not decoded) raw fields={sorted(t.raw)}")
    else:
        out.append(f"{head} slices={[str(s) for s in t.buffer_slices()]}")
    for label, seq in t.nested():
        out.append(f"{pad}  {label}:")
        for c in seq:
            _format_thunk(c, indent + 2, out)


def format_executable(e: Executable) -> str:
    out = [f"module {e.module_name}  ({' > '.join(e.envelope)})",
           f"target {e.target_triple} {e.target_cpu}  obj_files_kind={e.obj_files_kind}",
           f"parameters: {', '.join(map(str, e.parameter_shapes))}",
           f"result: {e.result_shape}", "", "allocations:"]
    for a in e.allocations:
        extra = ""
        if a.kind == "parameter":
            extra = f" {a.parameter_number} at {{{','.join(map(str, a.parameter_shape_index))}}}"
        flags = "".join([" maybe-live-out" if a.maybe_live_out and a.kind != "output" else "",
                         " tuple" if a.is_tuple else ""])
        out.append(f"  {a.index}: size {a.size}, {a.kind}{extra}{flags}")
        for v in a.values:
            out.append(f"      {v.instruction}{{{','.join(map(str, v.shape_index))}}}"
                       f" offset={v.offset} size={v.size}")
        if a.index in e.constants:
            c = e.constants[a.index]
            out.append(f"      bytes[{len(c)}] {c[:32].hex()}{'...' if len(c) > 32 else ''}")
    if e.missing_constants:
        out.append(f"  constants without recoverable values: {list(e.missing_constants)}")
    out += ["", "thunks:"]
    for t in e.thunks:
        _format_thunk(t, 1, out)
    if e.symbols:
        out += ["", "symbols: " + ", ".join(s.name for s in e.symbols)]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m specializer.xla_executable FILE.bin", file=sys.stderr)
        return 2
    with open(argv[0], "rb") as f:
        print(format_executable(decode_executable(f.read())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
