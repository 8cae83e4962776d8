"""The program capture lowers: XLA's thunk sequence, as plain data.

A thunk sequence is a tuple of these nodes, in execution order. Buffers are slices of XLA's
allocations; the memory plan gives each allocation a static address.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Slice:
    alloc: int
    offset: int
    size: int


@dataclass(frozen=True)
class Kernel:
    """`ptr @name(ptr %frame)` from XLA's IR, called once per workgroup."""
    name: str
    args: tuple[Slice, ...]
    workgroups: tuple[int, int, int] = (1, 1, 1)
    op: str = ""  # the HLO instruction it runs (hlo.json; the profile names it)


@dataclass(frozen=True)
class Copy:
    src: Slice
    dst: Slice
    op: str = ""  # the HLO instruction


@dataclass(frozen=True)
class While:
    cond: tuple  # thunks computing the predicate
    pred: Slice  # pred[] buffer the condition writes
    body: tuple
    trip_count: int | None = None


@dataclass(frozen=True)
class Conditional:
    index: Slice  # pred[] (true -> branch 0) or s32[] (out of range -> last branch)
    index_is_pred: bool
    branches: tuple  # one thunk sequence per branch


@dataclass(frozen=True)
class Scratch:
    """A libjit kernel's working memory (e.g. an im2col buffer): one shared static buffer."""
    size: int


@dataclass(frozen=True)
class Const:
    """A constant global a call points at (a CMSIS-NN struct, per-channel array, ...). `init`
    may name the shared scratch buffer as {scratch} and XLA buffer k of `slices` as {slice<k>}
    (a struct holding the addresses of a layer's weights); equal names must mean equal contents."""
    name: str
    type: str  # LLVM type
    init: str  # LLVM initializer
    refs: tuple = ()  # the Consts `init` points at (emitted with it)
    slices: tuple = ()  # the buffers `init` points at


@dataclass(frozen=True)
class LibCall:
    """A call of a libjit kernel for an op XLA leaves to its runtime (dot, convolution, ...),
    or of a CMSIS-NN function for an int8 block."""
    function: str
    args: tuple  # Slice (buffer address), Scratch, Const (its address), None (null), or int (i32)
    ret: str = "void"  # LLVM return type (CMSIS-NN returns its i32 status, ignored)
    scratch: int = 0  # bytes of the shared scratch buffer a Const context hands the function
    op: str = ""  # the HLO instruction it runs
    note: str = ""  # for capture.log: what a CMSIS-NN wrapper call picks, or why the call is not the wrapper
