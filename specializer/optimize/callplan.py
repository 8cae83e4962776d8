"""Which call sites a specialization can take, and with which constants (specialize.py's reading).

A call qualifies when it calls a defined function directly and passes constant arguments: in
``dims`` mode constant scalars and pointers to constant dimension data, in ``all-args`` every
constant (global addresses, constant GEPs into globals, weights, null) and pointers to stack
objects whose contents are constant at the call and which the callee only reads. What makes a
call impossible to specialize (musttail, operand bundles, a variadic or alwaysinline callee, ...)
is said in `ConstCall.problem`, for the log.

The module is read twice over: llvmlite's view of each call (callee, operand kinds, types) and
the printed text of its line (argument texts and columns, for the rewrite).
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.binding as llvm

from specializer.errors import UserError
from specializer.llvm import irtext, module
from specializer.llvm.irtext import quote
from specializer.optimize import callsites, constdata
from specializer.optimize.speclog import ConstArg

_SCALAR_KINDS = {llvm.ValueKind.constant_int, llvm.ValueKind.constant_fp}
_ADDRESS_KINDS = {
    llvm.ValueKind.global_variable, llvm.ValueKind.function, llvm.ValueKind.constant_expr,
    llvm.ValueKind.constant_pointer_null, llvm.ValueKind.constant_aggregate_zero,
    llvm.ValueKind.constant_data_array, llvm.ValueKind.constant_data_vector,
    llvm.ValueKind.constant_array, llvm.ValueKind.constant_struct, llvm.ValueKind.constant_vector,
}
# parameters a clone cannot pass on as plain pointers
_UNSUPPORTED_PARAM_ATTRS = ("byval", "byref", "sret", "inalloca", "preallocated", "swiftself", "swifterror",
                            "swiftasync", "nest")
# element types that make constant data more than dimensions (what dims leaves alone)
_NOT_DIMS_DATA = ("ptr", "float", "double", "half", "bfloat", "i8")
_DTYPE_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "int8": "i8", "uint8": "u8",
                "int16": "i16", "uint16": "u16", "int32": "i32", "uint32": "u32", "bool": "pred"}


@dataclass
class ConstCall:
    """A call with constant arguments."""
    line: int  # index into the module's lines
    caller: str
    callee: str
    args: list[str]  # argument texts as written at the call site (type, attributes, value)
    const: list[ConstArg]
    types: list[str]  # argument types
    ret: str  # the call's type (void or the return type)
    callee_start: int  # column of the callee token on the line
    args_end: int  # column just past the closing parenthesis
    problem: str = ""  # why this call cannot be specialized
    number: int | None = None  # the model's call number (callsites.py)
    shape_only: bool = False  # specialized by dims' rule in all-args (see Planner.call)


class ModuleText:
    """The module as text lines plus llvmlite's view of it."""

    def __init__(self, text: str, where: str):
        self.mod = module.parse(text, where)
        self.text = str(self.mod)
        self.lines = self.text.split("\n")
        self.spans = irtext.function_spans(self.lines)
        self.td = llvm.create_target_data(self.mod.data_layout)
        self.groups = irtext.attribute_groups(self.text)
        self.functions = {f.name: f for f in self.mod.functions}
        self.numbers = callsites.Numbers(self.text)
        self.type_defs = "\n".join(irtext.type_defs(self.lines))
        self._sizes: dict[str, int] = {}
        self.globals = {g.name: g for g in self.mod.global_variables}  # all linkages
        self.global_lines = irtext.global_lines(self.lines)

    def sizeof(self, ty: str) -> int:
        """ABI size of a type written as in this module (named struct types included)."""
        if ty not in self._sizes:
            probe = module.parse(f"{self.type_defs}\n@probe = external global {ty}\n", "type probe")
            self._sizes[ty] = self.td.get_abi_size(probe.get_global_variable("probe").global_value_type)
        return self._sizes[ty]

    def param_is_read_only(self, fn: str, index: int) -> bool:
        """The callee never writes through its parameter `index` (readonly/readnone, or memory
        effects that only read argument memory)."""
        params = irtext.signature(self.define_line(fn)).params
        if index < len(params) and irtext.has_keyword(params[index], "readonly", "readnone"):
            return True
        return irtext.argument_memory(self.fn_attributes(fn)) in ("read", "none")

    def define_line(self, fn: str) -> str:
        return self.lines[self.spans[fn][0]]

    def fn_attributes(self, fn: str) -> str:
        return irtext.function_attributes(self.define_line(fn), self.groups)

    def calling_convention(self, fn: str) -> str:
        """The callee's calling convention keyword with a trailing space ('' for the C default)."""
        return irtext.calling_convention(self.define_line(fn))

    def is_constant_global(self, name: str) -> bool:
        return name in self.global_lines and irtext.is_constant_def(self.lines[self.global_lines[name]])

    def instruction_lines(self, fn: str) -> list[int]:
        return irtext.instruction_starts(self.lines, *self.spans[fn])


def _type_summary(ty: str) -> str:
    """`[16 x [32 x float]]` -> `f32[16x32]`; other types as LLVM prints them."""
    dims, elem = irtext.array_dims(ty)
    if not dims:
        return ty
    elem = {"float": "f32", "double": "f64", "half": "f16"}.get(elem, elem)
    return f"{elem}[{'x'.join(dims)}]"


class Planner:
    def __init__(self, m: ModuleText, mode: str, shapes: dict, shape_only: frozenset = frozenset(),
                 dims_callers: frozenset = frozenset()):
        self.m, self.mode, self.shapes = m, mode, shapes
        self.shape_only, self.dims_callers = shape_only, dims_callers
        self.uses: dict[str, constdata.FunctionUses] = {}

    def is_dims_data(self, op: llvm.ValueRef) -> bool:
        """A pointer to constant non-tensor data, what Glow's default specializes: a constant
        global that is no model tensor and holds no addresses, floats or bytes (dimension
        arrays, parameter structs)."""
        return (op.value_kind == llvm.ValueKind.global_variable and op.name not in self.shapes
                and self.m.is_constant_global(op.name)
                and not irtext.has_keyword(str(self.m.globals[op.name].global_value_type), *_NOT_DIMS_DATA))

    def stack_object(self, caller: llvm.ValueRef, alloca: llvm.ValueRef, inst: llvm.ValueRef, index: int,
                     callee: str, mode: str) -> ConstArg | None:
        """The argument as a pointer to constant data, when it points to a stack object whose
        contents are constant at the call and the callee only reads it (constdata.py)."""
        if not self.m.param_is_read_only(callee, index):
            return None
        if caller.name not in self.uses:
            self.uses[caller.name] = constdata.FunctionUses(caller)
        obj = constdata.stack_object(self.uses[caller.name], alloca, inst, self.m.sizeof, self.m.td, quote)
        if isinstance(obj, str) or (obj.pointers and mode != "all-args"):
            return None
        name = str(alloca).split("=")[0].strip()
        shown = irtext.global_plus_offset(obj.value)
        return ConstArg(index, f"ptr {obj.value}", f"stack object {name} ({obj.size} bytes, constant) = {shown}",
                        init=obj.init, align=obj.align)

    def global_summary(self, name: str) -> str:
        ref = quote(name)
        f = self.m.functions.get(name)
        if f is not None:
            return f"{ref} (function)"
        g = self.m.globals.get(name)
        if g is None:
            return ref
        ty = g.global_value_type
        nbytes = self.m.td.get_abi_size(ty)
        kind = "constant" if self.m.is_constant_global(name) else "buffer"
        if name in self.shapes:
            dtype, shape = self.shapes[name]
            what = f"{_DTYPE_SHORT.get(dtype, dtype)}[{'x'.join(map(str, shape))}]"
        else:
            what = _type_summary(str(ty))
        return f"{ref} ({what}, {nbytes} bytes, {kind})"

    def summary(self, op: llvm.ValueRef, value: str) -> str:
        kind = op.value_kind
        if kind in (llvm.ValueKind.global_variable, llvm.ValueKind.function):
            return self.global_summary(op.name)
        if kind == llvm.ValueKind.constant_expr:
            m = irtext.CONST_GEP.fullmatch(value, len("ptr ")) if value.startswith("ptr ") else None
            if m:
                base = irtext.unquote(m.group("base")[1:])
                described = self.global_summary(base)
                return f"{quote(base)}+{m.group('offset')}{described[len(quote(base)):]}"
            bases = irtext.global_refs(value)
            if len(set(bases)) == 1:
                return f"{value}  ; {self.global_summary(bases[0])}"
        return value

    def is_constant(self, op: llvm.ValueRef, ty: str, mode: str) -> bool:
        kind = op.value_kind
        if kind in _SCALAR_KINDS and irtext.is_scalar_type(ty):
            return True
        if mode == "dims":
            return self.is_dims_data(op)
        return kind in _ADDRESS_KINDS or kind in _SCALAR_KINDS

    def calls(self) -> list[ConstCall]:
        m = self.m
        found = []
        for fn in m.mod.functions:
            if fn.is_declaration:
                continue
            line_numbers = m.instruction_lines(fn.name)
            insts = [i for b in fn.blocks for i in b.instructions]
            if len(insts) != len(line_numbers):
                raise UserError(f"specialize: cannot map the instructions of {quote(fn.name)} to its text")
            for inst, ln in zip(insts, line_numbers):
                if "call" not in m.lines[ln] or inst.opcode != "call":  # the text first: cheaper than asking LLVM
                    continue
                call = self.call(fn, inst, ln)
                if call is not None:
                    found.append(call)
        return found

    def call(self, fn: llvm.ValueRef, inst: llvm.ValueRef, ln: int) -> ConstCall | None:
        caller = fn.name
        ops = list(inst.operands)
        if ops[-1].value_kind != llvm.ValueKind.function:
            return None  # indirect call
        callee = self.m.functions.get(ops[-1].name)
        if callee is None or callee.is_declaration:
            return None  # intrinsics, external functions
        line = self.m.lines[ln]
        number = self.m.numbers.of(line)
        # a call chosen shape-only by measurement, and every call inside its clones, takes dims' rule
        shape_only = self.mode == "all-args" and (number in self.shape_only or caller in self.dims_callers)
        mode = "dims" if shape_only else self.mode
        ops = ops[:-1]
        types = [str(o.type) for o in ops]
        const = []
        for i, (o, ty) in enumerate(zip(ops, types)):
            if self.is_constant(o, ty, mode):
                value = constdata.typed(o, quote)
                const.append(ConstArg(i, value, self.summary(o, value)))
            elif o.value_kind == llvm.ValueKind.instruction and ty == "ptr" and irtext.alloca(str(o)):
                obj = self.stack_object(fn, o, inst, i, callee.name, mode)
                if obj is not None:
                    const.append(obj)
        if not const:
            return None
        found = irtext.call_args(line, callee.name)
        problem = ""
        at, args, end = found if found else (-1, [], -1)
        if found is None:
            problem = "call not understood"
        elif len(args) != len(ops):
            problem = "call has operand bundles or a mismatched signature"
        if not problem:
            problem = self.callee_problem(callee, line, end)
        return ConstCall(ln, caller, callee.name, args, const, types, str(inst.type), at, end, problem,
                         number, shape_only)

    def callee_problem(self, callee: llvm.ValueRef, line: str, end: int) -> str:
        if irtext.has_keyword(line, "musttail"):
            return "musttail call"
        if irtext.has_operand_bundles(line, end):
            return "call has operand bundles"
        define = self.m.define_line(callee.name)
        after_name = define[irtext.signature(define).name_at:]
        if "..." in after_name:
            return "callee is variadic"
        attrs = self.m.fn_attributes(callee.name)
        if irtext.has_keyword(attrs, "alwaysinline"):
            return "callee is alwaysinline: the constants reach it by inlining anyway"
        if irtext.has_keyword(attrs, "optnone", "naked"):
            return "callee is optnone or naked"
        if irtext.has_keyword(after_name, *_UNSUPPORTED_PARAM_ATTRS):
            return "callee has byval/sret/inalloca-style parameters"
        return ""
