"""What a pointer argument points to, when the pointed-to bytes are constant at a call.

CMSIS-DSP and CMSIS-NN take shapes and buffer addresses through structs passed by pointer
(`arm_matrix_instance_f32 {numRows, numCols, pData}`, `cmsis_nn_dims`, ...). A libjit kernel
builds them on its stack; once the kernel is specialized, every field is a constant, but the
call passes the address of a stack object, which is no constant. This module decides when such
an object's contents are known at the call, and what they are:

* the argument is an ``alloca`` of the caller (one element) that nothing but this call reads:
  every other use is a store of a constant, a ``memset`` to zero, a lifetime marker, or an
  ``i8`` GEP at a constant offset whose own uses are such stores;
* every store is in the call's basic block, before the call (so the bytes are the same on every
  path that reaches it, also inside a loop; a store after the call or in another block makes the
  object non-constant, however harmless it may look);
* stores do not partly overlap (an exact overwrite takes the later value);
* the callee only reads the object (checked by the caller of this module: ``readonly``).

Bytes no store wrote are zero in the result (reading them was reading uninitialized memory, so
zero is one of the values they could have had). The result is a packed-struct constant with the
object's size, to become a private constant global the specialized callee reads instead.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Callable

import llvmlite.binding as llvm

from specializer.llvm import irtext

_CONST_KINDS = {
    llvm.ValueKind.constant_int, llvm.ValueKind.constant_fp, llvm.ValueKind.constant_pointer_null,
    llvm.ValueKind.global_variable, llvm.ValueKind.function, llvm.ValueKind.constant_expr,
    llvm.ValueKind.constant_aggregate_zero, llvm.ValueKind.constant_data_array,
    llvm.ValueKind.constant_data_vector, llvm.ValueKind.constant_array, llvm.ValueKind.constant_struct,
    llvm.ValueKind.constant_vector,
}
_UNDEF_KINDS = {llvm.ValueKind.undef_value, llvm.ValueKind.poison_value}
_POINTERLESS_KINDS = {llvm.ValueKind.constant_int, llvm.ValueKind.constant_fp,
                      llvm.ValueKind.constant_pointer_null, llvm.ValueKind.constant_aggregate_zero,
                      llvm.ValueKind.constant_data_array, llvm.ValueKind.constant_data_vector}


def key(v: llvm.ValueRef) -> int:
    """Identity of an LLVM value (ValueRefs are fresh wrappers each time)."""
    return ctypes.addressof(v._ptr[0])


@dataclass(frozen=True)
class ConstObject:
    type: str  # packed struct type: "<{ i16, i16, ptr }>"
    value: str  # its value: "<{ i16 125, i16 64, ptr @x }>"
    size: int
    align: int
    pointers: bool  # holds an address (not only numbers and null)

    @property
    def init(self) -> str:
        return f"{self.type} {self.value}"


class FunctionUses:
    """Positions and users of the instructions of one function (llvmlite has no use lists)."""

    def __init__(self, fn: llvm.ValueRef):
        self.pos: dict[int, tuple[int, int]] = {}
        self.users: dict[int, list[tuple[llvm.ValueRef, int]]] = {}
        for bi, b in enumerate(fn.blocks):
            for ii, inst in enumerate(b.instructions):
                self.pos[key(inst)] = (bi, ii)
                for oi, op in enumerate(inst.operands):
                    if op.value_kind == llvm.ValueKind.instruction:
                        self.users.setdefault(key(op), []).append((inst, oi))


def typed(op: llvm.ValueRef, quote: Callable[[str], str]) -> str:
    """A constant operand as LLVM writes it in an argument list ("i32 4", "ptr @g")."""
    if op.value_kind in (llvm.ValueKind.global_variable, llvm.ValueKind.function):
        return f"{op.type} {quote(op.name)}"
    return str(op).strip()


def _callee_name(call: llvm.ValueRef) -> str:
    target = list(call.operands)[-1]
    return target.name if target.value_kind == llvm.ValueKind.function else ""


def stack_object(uses: FunctionUses, alloca: llvm.ValueRef, call: llvm.ValueRef,
                 sizeof: Callable[[str], int], td: llvm.TargetData,
                 quote: Callable[[str], str]) -> ConstObject | str:
    """The constant contents of `alloca` at `call`, or why they are not constant."""
    a = irtext.alloca(str(alloca))
    if not a or "inalloca" in a.type:
        return "not a single stack object"
    size = sizeof(a.type)
    align = a.align or 4
    call_block, call_at = uses.pos[key(call)]
    # (instruction position, offset, size, type, typed value, holds an address) in program order
    writes: list[tuple[int, int, int, str | None, str | None, bool]] = []
    passed = 0
    todo = [(alloca, 0)]
    while todo:
        ptr, offset = todo.pop()
        for user, oi in uses.users.get(key(ptr), []):
            op = user.opcode
            where = uses.pos[key(user)]
            if key(user) == key(call):
                passed += 1
                continue
            if op == "getelementptr":
                at = irtext.i8_gep_offset(str(user))
                if at is None or oi != 0:
                    return "indexed at a non-constant offset in the caller"
                todo.append((user, offset + at))
                continue
            if op == "call":
                callee = _callee_name(user)
                if callee.startswith("llvm.lifetime."):
                    continue
                if callee.startswith("llvm.memset.") and oi == 0:
                    ops = list(user.operands)
                    if (ops[1].value_kind == llvm.ValueKind.constant_int and ops[1].get_constant_value() == 0
                            and ops[2].value_kind == llvm.ValueKind.constant_int):
                        if where[0] != call_block or where[1] > call_at:
                            return _order(where, call_block, call_at)
                        writes.append((where[1], offset, ops[2].get_constant_value(), None, None, False))
                        continue
                return f"also passed to {quote(callee) if callee else 'an indirect call'} in the caller"
            if op == "store" and oi == 1:
                value = list(user.operands)[0]
                if where[0] != call_block or where[1] > call_at:
                    return _order(where, call_block, call_at)
                nbytes = td.get_abi_size(value.type)
                if value.value_kind in _UNDEF_KINDS:
                    writes.append((where[1], offset, nbytes, None, None, False))
                    continue
                if value.value_kind not in _CONST_KINDS:
                    return "a field is not constant"
                text = typed(value, quote)
                writes.append((where[1], offset, nbytes, str(value.type), text,
                               value.value_kind not in _POINTERLESS_KINDS))
                continue
            if op == "store":
                return "its address is stored in memory (it escapes)"
            if op == "load":
                return "the caller reads it too"
            return f"used by {op} in the caller"
    if passed != 1:
        return "passed more than once to the call"
    return _layout(sorted(writes), size, align)


def _order(where: tuple[int, int], block: int, at: int) -> str:
    if where[0] != block:
        return "written in another block than the call's"
    return "written after the call"


def _layout(writes, size: int, align: int) -> ConstObject | str:
    """Apply the writes in program order, then lay the bytes out as a packed struct."""
    pieces: dict[int, tuple[int, str | None, str | None, bool]] = {}  # offset -> (size, type, value, ptrs)
    for _, offset, nbytes, ty, value, ptrs in writes:
        if offset < 0 or offset + nbytes > size:
            return "written outside the object"
        for o, (n, *_) in list(pieces.items()):
            if o + n <= offset or offset + nbytes <= o:
                continue
            if ty is None and offset <= o and o + n <= offset + nbytes:
                del pieces[o]  # zeroed (memset) or made undefined again: the zero fill
            elif ty is not None and o == offset and n == nbytes:
                del pieces[o]  # overwritten: the later store's value
            else:
                return "written by overlapping stores"
        if ty is not None:
            pieces[offset] = (nbytes, ty, value, ptrs)
    types, values, at = [], [], 0
    for offset in sorted(pieces):
        n, ty, value, _ = pieces[offset]
        if offset > at:
            types.append(f"[{offset - at} x i8]")
            values.append(f"[{offset - at} x i8] zeroinitializer")
        types.append(ty)
        values.append(value)
        at = offset + n
    if size > at:
        types.append(f"[{size - at} x i8]")
        values.append(f"[{size - at} x i8] zeroinitializer")
    ptrs = any(p[3] for p in pieces.values())
    return ConstObject("<{ " + ", ".join(types) + " }>", "<{ " + ", ".join(values) + " }>", size, align, ptrs)
