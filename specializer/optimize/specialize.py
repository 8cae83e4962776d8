"""Call-site specialization: clone a callee for the constant arguments of its call sites.

For every call of a defined function that passes constant arguments, a clone
``@<callee>.spec.<hash>`` takes only the remaining (non-constant) arguments; its body is one call
of the original with the constants in place, marked ``alwaysinline``, so the always-inliner
later puts the callee's body into the clone where constant propagation folds it. The call
site is rewritten to call the clone. Call sites with the same callee and the same constants
share one clone. The hash is of the callee and its constants only (`clone_name`), so a clone
keeps its name when other call sites come or go.

Modes:

* ``dims`` (Glow's default): only constant scalar integer and float arguments.
* ``all-args``: every constant argument -- also global addresses, constant GEP expressions into
  globals (buffers in the static memory plan), constant weight arrays, XLA call frames, null.

Size budget (``max_growth``): the module with every candidate clone is optimized once as a
scratch copy in which each clone is kept out of line (``noinline``) and each specialized callee
stays as an external, unspecialized function; code bytes are ELF symbol sizes as emitted for
Cortex-M4, and the call graph is read off the optimized scratch IR. A callee's size is its own
bytes plus those of every function it reaches; what a clone adds is its own bytes plus those of
the functions it reaches that the callee does not (and no earlier clone of it already added).
All clones of one callee together may add at most ``max_growth`` times the callee's size (and
never less than MIN_BUDGET_BYTES more than it): clones are admitted in the order of their first
call site, and one that would push the total over the limit is refused. Refused call sites
keep calling the original and say so in the log. Counting the clones of a callee together is
what catches duplication: five clones of a kernel, each as large as the kernel, add five times
its code although each alone is "1x". Counting what a function reaches is what keeps a thin
wrapper (a few bytes that call the real kernel) from looking tiny. The budget is per round.

The rewrite is textual on LLVM's printed IR (one instruction per line, canonical), guided by
llvmlite's view of each call (callee, operand kinds, types); the result is re-parsed and
printed again, so it is canonical and byte-identical for the same input.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Callable

import llvmlite.binding as llvm

from specializer.llvm import irtext, module
from specializer.optimize import callsites, constdata
from specializer.llvm.irtext import quote, unquote as _unquote
from specializer.errors import UserError

MODES = ("dims", "all-args")

_SCALAR_KINDS = {llvm.ValueKind.constant_int, llvm.ValueKind.constant_fp}
_ADDRESS_KINDS = {
    llvm.ValueKind.global_variable, llvm.ValueKind.function, llvm.ValueKind.constant_expr,
    llvm.ValueKind.constant_pointer_null, llvm.ValueKind.constant_aggregate_zero,
    llvm.ValueKind.constant_data_array, llvm.ValueKind.constant_data_vector,
    llvm.ValueKind.constant_array, llvm.ValueKind.constant_struct, llvm.ValueKind.constant_vector,
}
# a clone's suffix: ".spec." + HASH_DIGITS hex digits (+ ".<n>" when that name was taken)
_SPEC_SUFFIX = re.compile(r"(\.spec\.[0-9a-f]{8}(\.\d+)?)+$")
HASH_DIGITS = 8
_SCALAR_TYPE = re.compile(r"^(i\d+|half|bfloat|float|double)$")
_GLOBAL_REF = re.compile(r'@("(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+)')
_ATTR_GROUP = re.compile(r"^attributes #(\d+) = \{ (.*) \}$", re.M)
# function attributes that do not carry over to a clone: memory effects (the clone reaches
# through globals what the callee reached through its arguments), inlining (decided anew),
# and those that name argument positions
_DROP_FN_ATTRS = re.compile(r'\s*\b(memory\([^)]*\)|alwaysinline|allocsize\([^)]*\)|allockind\([^)]*\))'
                            r'|\s*"alloc-family"(="[^"]*")?')
_UNSUPPORTED_PARAM_ATTRS = re.compile(r"\b(byval|byref|sret|inalloca|preallocated|swiftself|swifterror|"
                                      r"swiftasync|nest)\b")

# a clone at most this many bytes larger than its callee is never refused (a few instructions
# more than a tiny wrapper is no growth worth refusing)
MIN_BUDGET_BYTES = 64
BUDGET = "size budget"  # how a budget refusal's reason starts
FLASH = "flash budget"  # ... and a flash-budget refusal's


@dataclass(frozen=True)
class CodeSizes:
    """What a sizer measures on the optimized scratch module."""
    bytes: dict  # function -> code bytes (ELF symbol size)
    calls: dict  # function -> names of the defined functions it calls directly
    data: int = 0  # bytes of initialized global data (constants, weights): flash too

    def reach(self, fn: str) -> set[str]:
        """`fn` and every function it reaches through direct calls."""
        seen, todo = set(), [fn]
        while todo:
            f = todo.pop()
            if f not in seen and f in self.bytes:
                seen.add(f)
                todo.extend(self.calls.get(f, ()))
        return seen

    def total(self, fns) -> int:
        return sum(self.bytes[f] for f in fns)


SIZER = Callable[[str], CodeSizes]  # module text -> code sizes and call graph


@dataclass(frozen=True)
class ConstArg:
    index: int  # argument position, 0-based
    value: str  # typed constant as LLVM prints it: "i32 16", "ptr @mlp_w_w1", "ptr getelementptr (...)";
    # for a pointer to constant data on the caller's stack: "ptr <{ i16 125, ... }>" (what it points to)
    summary: str  # what the log shows: "i32 16", "@mlp_w_w1 (f32[16x32], 2048 bytes, constant)"
    init: str = ""  # pointer to constant stack data: the initializer of the private constant global the clone reads
    align: int = 4


@dataclass(frozen=True)
class Site:
    """One call site with constant arguments, and what became of it."""
    number: int  # 1-based, module order (numbering continues across rounds)
    round: int  # specialization round (round 2 sees the constants round 1 propagated)
    caller: str
    callee: str
    nargs: int
    const: tuple[ConstArg, ...]
    status: str  # kept | shared | refused
    clone: str | None  # the clone it calls now (None when refused)
    reason: str = ""
    clone_bytes: int | None = None  # code the clone adds: itself and what only it calls
    callee_bytes: int | None = None  # the unspecialized callee with every function it calls
    call: int | None = None  # the model's call number (callsites.py), when the call carries one
    shape_only: bool = False  # all-args specialized it by dims' rule (a call chosen shape-only, or inside one)


@dataclass(frozen=True)
class Specialized:
    mode: str
    max_growth: float | None
    text: str  # the module after specialization (canonical IR text)
    sites: tuple[Site, ...]
    flash_budget: int | None = None  # bytes of code + data the specialized build may take

    @property
    def clones(self) -> list[str]:
        return list(dict.fromkeys(s.clone for s in self.sites if s.clone))

    def counts(self) -> dict:
        c = {"kept": 0, "shared": 0, "refused": 0}
        for s in self.sites:
            c[s.status] += 1
        return c

    @property
    def refused_by_budget(self) -> int:
        """Call sites refused by the size budget (the others could not be specialized at all)."""
        return sum(1 for s in self.sites if s.status == "refused" and s.reason.startswith((BUDGET, FLASH)))

    @property
    def rounds(self) -> int:
        return max((s.round for s in self.sites), default=1)

    def refused_keys(self) -> frozenset:
        """Refused call sites, so a later round neither retries nor logs them again."""
        return frozenset(_site_key(s.caller, s.callee, s.const) for s in self.sites if s.status == "refused")

    def log_json(self) -> str:
        return json.dumps({"mode": self.mode, "max_growth": self.max_growth, "flash_budget": self.flash_budget,
                           "counts": self.counts(),
                           "rounds": self.rounds, "clones": self.clones,
                           "sites": [asdict(s) for s in self.sites]},
                          indent=1, sort_keys=True) + "\n"

    def log_text(self) -> str:
        """The specialization log as people read it: one block per call site."""
        c = self.counts()
        budget = (f"max growth {self.max_growth:g}x (code bytes of a callee's clones vs the unspecialized callee's)"
                  if self.max_growth is not None else "no size budget")
        if self.flash_budget is not None:
            budget += f", flash budget {self.flash_budget} bytes (code + data)"
        out = [f"; specialization log: mode {self.mode}, {budget}",
               f"; {len(self.sites)} call sites with constant arguments: {c['kept']} kept, "
               f"{c['shared']} shared, {c['refused']} refused; {len(self.clones)} clones"]
        last_round = 0
        for s in self.sites:
            if s.round != last_round:
                out.append(f"; round {s.round}")
                last_round = s.round
            tags = ([f"call {s.call}"] if s.call is not None else []) + (["shape-only"] if s.shape_only else [])
            head = f"#{s.number} {quote(s.caller)} -> {quote(s.callee)}"
            head += f" ({', '.join(tags)}): {s.status}" if tags else f": {s.status}"
            if s.clone:
                head += f" {quote(s.clone)}"
            if s.reason:
                head += f" ({s.reason})"
            out.append(head)
            for a in s.const:
                out.append(f"    arg {a.index} = {a.summary}")
            if len(s.const) < s.nargs:
                rest = sorted(set(range(s.nargs)) - {a.index for a in s.const})
                out.append(f"    kept as parameters: arg {', '.join(map(str, rest))}")
            if s.clone_bytes is not None and s.status != "shared":
                out.append(f"    size: clone adds {s.clone_bytes} bytes; callee {s.callee_bytes} bytes "
                           "(with the functions it calls)")
        return "\n".join(out) + "\n"


def constants_text(pairs) -> str:
    """The canonical text of constant arguments, (index, typed value) pairs: "0: i32 16\n2: ptr @w"."""
    return "\n".join(f"{i}: {v}" for i, v in sorted(pairs))


def lineage(history) -> dict[str, tuple[str, tuple, tuple]]:
    """Clone -> (the original function, the constants it fixes at that function's parameter
    positions, the original positions of its own parameters), from the call sites of earlier
    rounds in order. A clone's clone composes: f with arg 2 fixed, then arg 0 of that, is f
    with args 0 and 2 fixed, whatever order the rounds found them in."""
    out: dict[str, tuple[str, tuple, tuple]] = {}
    for s in history:
        if not s.clone or s.clone in out:
            continue
        root, fixed, kept = out.get(s.callee, (s.callee, (), tuple(range(s.nargs))))
        here = {a.index for a in s.const}
        fixed = tuple(sorted(fixed + tuple((kept[a.index], a.value) for a in s.const)))
        out[s.clone] = (root, fixed, tuple(k for i, k in enumerate(kept) if i not in here))
    return out


def clone_name(callee: str, const, taken=frozenset(), history: dict | None = None) -> str:
    """`<root>.spec.<hash>`: root is the original function (a clone's clone is `f.spec.<h2>`,
    not `f.spec.<h1>.spec.<h2>`); the hash is of the root and every constant fixed at its
    parameter positions (`lineage`, from `history`), so the name depends on nothing else: not on
    call-site order (editing one layer renames no other layer's clones) nor on the rounds that
    fixed the constants. A name already in `taken` gets `.2`, `.3`, ... (in call-site order, the
    only order-dependent part: a hash collision, or the same constants reached twice)."""
    root, fixed, kept = (history or {}).get(callee, (None, (), ()))
    if root is None:
        root, pairs = callee, tuple((a.index, a.value) for a in const)
    else:
        pairs = fixed + tuple((kept[a.index], a.value) for a in const)
    digest = hashlib.sha256(f"{root}\0{constants_text(pairs)}".encode()).hexdigest()[:HASH_DIGITS]
    root = _SPEC_SUFFIX.sub("", root) or root  # a clone whose lineage is unknown
    name, n = f"{root}.spec.{digest}", 1
    while name in taken:
        n += 1
        name = f"{root}.spec.{digest}.{n}"
    return name


def merge(rounds: list[Specialized]) -> Specialized:
    """Several rounds as one result: the last round's module, every round's call sites."""
    sites = tuple(s for r in rounds for s in r.sites)
    return Specialized(rounds[-1].mode, rounds[-1].max_growth, rounds[-1].text, sites, rounds[-1].flash_budget)


def _site_key(caller: str, callee: str, const) -> tuple:
    return (caller, callee, tuple((a.index, a.value) for a in const))


# --------------------------------------------------------------------------- reading calls


@dataclass
class _Call:
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
    shape_only: bool = False  # specialized by dims' rule in all-args (see _Planner.call)


def _split_args(line: str, open_paren: int) -> tuple[list[str], int]:
    """Top-level comma-separated pieces inside the parentheses at `open_paren`; end column."""
    depth, i, start, pieces, in_str = 0, open_paren, open_paren + 1, [], False
    while i < len(line):
        ch = line[i]
        if in_str:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
            if depth == 0:
                piece = line[start:i].strip()
                if piece:
                    pieces.append(piece)
                return pieces, i + 1
        elif ch == "," and depth == 1:
            pieces.append(line[start:i].strip())
            start = i + 1
        i += 1
    raise ValueError(f"unbalanced call: {line.strip()}")


@dataclass(frozen=True)
class DirectCall:
    """A `call <type> @callee(...)` instruction line, as the textual readers of a module see it."""
    line: int  # index into the module's lines
    callee: str
    args: list[str]  # argument texts ("ptr @w", "i32 4")
    start: int  # column of `call`
    end: int  # column just past the closing parenthesis

    def ints(self, first: int, count: int) -> list[int] | None:
        """Arguments first..first+count-1 as numbers, when all are constant i32s."""
        out = []
        for a in self.args[first:first + count]:
            m = re.match(r"^i32 (-?\d+)$", a)
            if not m:
                return None
            out.append(int(m.group(1)))
        return out if len(out) == count else None


def direct_calls(lines: list[str], callees: tuple[str, ...]):
    """The call instructions (not comments) of `lines` that call one of `callees` directly."""
    pattern = re.compile(r"call [^@(]*@(" + "|".join(map(re.escape, callees)) + r")\(")
    for i, line in enumerate(lines):
        m = pattern.search(line) if line.startswith("  ") else None
        if m:
            args, end = _split_args(line, m.end() - 1)
            yield DirectCall(i, m.group(1), args, m.start(), end)


def _function_lines(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Function name -> (line of `define`, line of the closing `}`)."""
    spans, i = {}, 0
    while i < len(lines):
        if lines[i].startswith("define "):
            name = irtext.define_name(lines[i])
            j = i
            while lines[j] != "}":
                j += 1
            spans[name] = (i, j)
            i = j
        i += 1
    return spans


class _Module:
    """The module as text lines plus llvmlite's view of it."""

    def __init__(self, text: str, where: str):
        self.mod = module.parse(text, where)
        self.text = str(self.mod)
        self.lines = self.text.split("\n")
        self.spans = _function_lines(self.lines)
        self.td = llvm.create_target_data(self.mod.data_layout)
        self.groups = {int(m.group(1)): m.group(2) for m in _ATTR_GROUP.finditer(self.text)}
        self.functions = {f.name: f for f in self.mod.functions}
        self.numbers = callsites.Numbers(self.text)
        self.type_defs = "\n".join(ln for ln in self.lines if re.match(r"^%\S+ = type ", ln))
        self._sizes: dict[str, int] = {}
        self.globals = {g.name: g for g in self.mod.global_variables}  # all linkages
        self.global_lines = {}
        for i, line in enumerate(self.lines):
            if line.startswith("@"):
                m = _GLOBAL_REF.match(line)
                self.global_lines[_unquote(m.group(1))] = i

    def sizeof(self, ty: str) -> int:
        """ABI size of a type written as in this module (named struct types included)."""
        if ty not in self._sizes:
            probe = module.parse(f"{self.type_defs}\n@probe = external global {ty}\n", "type probe")
            self._sizes[ty] = self.td.get_abi_size(probe.get_global_variable("probe").global_value_type)
        return self._sizes[ty]

    def param_is_read_only(self, fn: str, index: int) -> bool:
        """The callee never writes through its parameter `index` (readonly/readnone, or memory
        effects that only read argument memory)."""
        line = self.define_line(fn)
        params, _ = _split_args(line, line.index(quote(fn) + "(") + len(quote(fn)))
        if index < len(params) and re.search(r"\b(readonly|readnone)\b", params[index]):
            return True
        mem = re.search(r"\bmemory\(([^)]*)\)", self.fn_attributes(fn))
        if not mem:
            return False
        parts = [p.strip() for p in mem.group(1).split(",")]
        argmem = next((p.split(":")[1].strip() for p in parts if p.startswith("argmem:")), None)
        default = next((p for p in parts if ":" not in p), "readwrite")
        return (argmem or default) in ("read", "none")

    def define_line(self, fn: str) -> str:
        return self.lines[self.spans[fn][0]]

    def fn_attributes(self, fn: str) -> str:
        line = self.define_line(fn)
        _, end = _split_args(line, line.index(quote(fn) + "(") + len(quote(fn)))
        refs = re.findall(r"#(\d+)", line[end:])
        return " ".join(self.groups.get(int(r), "") for r in refs).strip()

    def calling_convention(self, fn: str) -> str:
        """The callee's calling convention keyword with a trailing space ('' for the C default)."""
        line = self.define_line(fn)
        head = line[: line.index(quote(fn) + "(")]
        m = re.search(r"(?:^| )([a-z_0-9]+cc|cc \d+) ", head[len("define"):] + " ")
        return m.group(1) + " " if m else ""

    def is_constant_global(self, name: str) -> bool:
        line = self.lines[self.global_lines[name]][:300] if name in self.global_lines else ""
        return re.match(r'^@\S+ = (?:[a-z_]+ )*constant\b', line) is not None

    def instruction_lines(self, fn: str) -> list[int]:
        """First line of each instruction (a switch continues on lines of its own: its cases
        indented further, then `  ]`)."""
        a, b = self.spans[fn]
        return [i for i in range(a + 1, b) if re.match(r"  [^ \]]", self.lines[i])]


def _type_summary(ty: str) -> str:
    """`[16 x [32 x float]]` -> `f32[16x32]`; other types as LLVM prints them."""
    dims = []
    while True:
        m = re.match(r"^\[(\d+) x (.*)\]$", ty)
        if not m:
            break
        dims.append(m.group(1))
        ty = m.group(2)
    if not dims:
        return ty
    elem = {"float": "f32", "double": "f64", "half": "f16"}.get(ty, ty)
    return f"{elem}[{'x'.join(dims)}]"


_DTYPE_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "int8": "i8", "uint8": "u8",
                "int16": "i16", "uint16": "u16", "int32": "i32", "uint32": "u32", "bool": "pred"}


_ALLOCA = re.compile(r"^\s*%\S+ = alloca ")
_NOT_DIMS_DATA = re.compile(r"\b(ptr|float|double|half|bfloat|i8)\b")
_GEP_CONST = re.compile(r"getelementptr (?:(?:inbounds|nuw|nusw) )*\(i8, ptr (@\S+), i32 (-?\d+)\)")


class _Planner:
    def __init__(self, m: _Module, mode: str, shapes: dict, shape_only: frozenset = frozenset(),
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
                and not _NOT_DIMS_DATA.search(str(self.m.globals[op.name].global_value_type)))

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
        shown = _GEP_CONST.sub(lambda g: f"{g.group(1)}+{g.group(2)}", obj.value)
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
            m = re.match(r'^ptr getelementptr (?:inbounds |nuw |nusw )*\(i8, ptr (@\S+), i(?:32|64) (-?\d+)\)$',
                         value)
            if m:
                base = _unquote(m.group(1)[1:])
                described = self.global_summary(base)
                return f"{quote(base)}+{m.group(2)}{described[len(quote(base)):]}"
            bases = [_unquote(r) for r in _GLOBAL_REF.findall(value)]
            if len(set(bases)) == 1:
                return f"{value}  ; {self.global_summary(bases[0])}"
        return value

    def is_constant(self, op: llvm.ValueRef, ty: str, mode: str) -> bool:
        kind = op.value_kind
        if kind in _SCALAR_KINDS and _SCALAR_TYPE.match(ty):
            return True
        if mode == "dims":
            return self.is_dims_data(op)
        return kind in _ADDRESS_KINDS or kind in _SCALAR_KINDS

    def calls(self) -> list[_Call]:
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
                if inst.opcode != "call":
                    continue
                call = self.call(fn, inst, ln)
                if call is not None:
                    found.append(call)
        return found

    def call(self, fn: llvm.ValueRef, inst: llvm.ValueRef, ln: int) -> _Call | None:
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
            elif o.value_kind == llvm.ValueKind.instruction and ty == "ptr" and _ALLOCA.match(str(o)):
                obj = self.stack_object(fn, o, inst, i, callee.name, mode)
                if obj is not None:
                    const.append(obj)
        if not const:
            return None
        token = quote(callee.name) + "("
        at = line.find(token, line.find("call "))
        problem = ""
        args, end = [], at
        if at < 0:
            problem = "call not understood"
        else:
            args, end = _split_args(line, at + len(token) - 1)
            if len(args) != len(ops):
                problem = "call has operand bundles or a mismatched signature"
        if not problem:
            problem = self.callee_problem(callee, line, end)
        return _Call(ln, caller, callee.name, args, const, types, str(inst.type), at, end, problem,
                     number, shape_only)

    def callee_problem(self, callee: llvm.ValueRef, line: str, end: int) -> str:
        if re.search(r"\bmusttail\b", line):
            return "musttail call"
        if re.search(r"\[\s*\"", line[end:]):
            return "call has operand bundles"
        define = self.m.define_line(callee.name)
        if "..." in define[define.index(quote(callee.name) + "("):]:
            return "callee is variadic"
        attrs = self.m.fn_attributes(callee.name)
        if re.search(r"\balwaysinline\b", attrs):
            return "callee is alwaysinline: the constants reach it by inlining anyway"
        if re.search(r"\b(optnone|naked)\b", attrs):
            return "callee is optnone or naked"
        params = define[define.index(quote(callee.name) + "("):]
        if _UNSUPPORTED_PARAM_ATTRS.search(params):
            return "callee has byval/sret/inalloca-style parameters"
        return ""


# --------------------------------------------------------------------------- rewriting


@dataclass
class _Clone:
    name: str
    callee: str
    key: tuple
    first: _Call
    sites: list = field(default_factory=list)


def _rewrite_call(line: str, call: _Call, clone: str) -> str:
    const_at = {a.index for a in call.const}
    kept = [a for i, a in enumerate(call.args) if i not in const_at]
    tail = line[call.args_end:]
    md = tail.find(", !")
    tail = tail[md:] if md >= 0 else ""  # call-site function attributes belonged to the old callee
    return line[:call.callee_start] + f"{quote(clone)}({', '.join(kept)})" + tail


def _data_name(clone: str, index: int) -> str:
    """The private constant global holding what a clone's argument `index` pointed to."""
    return f"{clone}.arg{index}"


def _data_globals(c: _Clone) -> str:
    return "".join(f"{quote(_data_name(c.name, a.index))} = private unnamed_addr constant {a.init}, align {a.align}\n"
                   for a in c.first.const if a.init)


def _clone_text(m: _Module, c: _Clone) -> str:
    call = c.first
    const = {a.index: f"ptr {quote(_data_name(c.name, a.index))}" if a.init else a.value for a in call.const}
    params, args = [], []
    for i, ty in enumerate(call.types):
        if i in const:
            args.append(const[i])
        else:
            params.append(f"{ty} %arg{i}")
            args.append(f"{ty} %arg{i}")
    attrs = _DROP_FN_ATTRS.sub("", m.fn_attributes(c.callee)).strip()
    ret = call.ret
    cc = m.calling_convention(c.callee)  # the clone is called as the callee was
    invoke = f"call {cc}{ret} {quote(c.callee)}({', '.join(args)}) alwaysinline"
    body = [f"  ret void" if ret == "void" else f"  ret {ret} %r"]
    body.insert(0, f"  {invoke}" if ret == "void" else f"  %r = {invoke}")
    return "\n".join([f"define internal {cc}{ret} {quote(c.name)}({', '.join(params)}) {attrs} {{".replace("  {", " {"),
                      "entry:", *body, "}", ""])


def _apply(m: _Module, clones: list[_Clone], where: str) -> str:
    lines = list(m.lines)
    for c in clones:
        for call in c.sites:
            lines[call.line] = _rewrite_call(lines[call.line], call, c.name)
    text = ("\n".join(lines) + "\n" + "".join(_data_globals(c) for c in clones)
            + "\n".join(_clone_text(m, c) for c in clones))
    return str(module.parse(text, where))


def _scratch(text: str, clones: list[_Clone], where: str) -> str:
    """The module for measuring sizes: clones out of line, specialized callees unspecialized."""
    mod = module.parse(text, where)
    for c in clones:
        mod.get_function(c.name).add_function_attribute("noinline")
    for callee in dict.fromkeys(c.callee for c in clones):
        fn = mod.get_function(callee)
        fn.linkage = llvm.Linkage.external  # no constants propagate into it from its callers
        fn.add_function_attribute("noinline")
    return str(mod)


def _flash_refusals(sizes: CodeSizes, candidates: list, measured: dict, refused: dict, budget: int) -> None:
    """Refuse clones, most added code first, until the scratch build's code + data fits `budget`.

    The scratch build holds every candidate clone and every original callee, unrolled as the
    variant's O2 unrolls, so its size is an upper bound of what the accepted clones give."""
    dead = set().union(*(measured[c.name]["added"] for c in candidates if c.name in refused))
    need = sizes.total(set(sizes.bytes) - dead) + sizes.data
    order = sorted((c for c in candidates if c.name not in refused),
                   key=lambda c: (-sizes.total(measured[c.name]["added"] - dead), c.name))
    for c in order:
        if need <= budget:
            break
        gone = measured[c.name]["added"] - dead
        refused[c.name] = (f"{FLASH}: the build would need {need} bytes of flash > {budget} "
                           f"(--flash-budget); this clone adds {sizes.total(gone)}")
        need -= sizes.total(gone)
        dead |= gone


def specialize(text: str, mode: str = "dims", *, max_growth: float | None = None,
               flash_budget: int | None = None, sizer: SIZER | None = None, shapes: dict | None = None,
               where: str = "module.ll", round: int = 1, first_number: int = 1,
               skip: frozenset = frozenset(), reserved: frozenset = frozenset(), earlier: tuple = (),
               shape_only: frozenset = frozenset(), dims_callers: frozenset = frozenset()) -> Specialized:
    """Specialize every call site of `text` with constant arguments (see the module docstring).

    sizer: module text -> {function: code bytes}, required with max_growth or flash_budget.
    flash_budget: bytes of code + initialized data the scratch build may reach; past it, the
    clones that add the most code are refused first until it fits.
    shapes: global symbol -> (dtype, shape), to describe weights in the log.
    round, first_number, skip, reserved: for later rounds (see `merge`); `skip` holds the call
    sites refused before (Specialized.refused_keys), left alone and not logged again; `reserved`
    the names of earlier rounds' clones, never reused even when a clone has been inlined away;
    `earlier` their call sites, so a clone's clone is named by everything it fixes (`lineage`).
    shape_only (all-args): the model's call numbers (callsites.py) to specialize by dims' rule, as
    are the calls inside `dims_callers` (the clones made for such calls in earlier rounds)."""
    if mode not in MODES:
        raise UserError(f"unknown specialization mode '{mode}' (use {' or '.join(MODES)})")
    if max_growth is not None and max_growth <= 0:
        raise UserError(f"--max-growth must be positive, not {max_growth:g}")
    m = _Module(text, where)
    planner = _Planner(m, mode, shapes or {}, shape_only, dims_callers)
    calls = [c for c in planner.calls() if _site_key(c.caller, c.callee, c.const) not in skip]

    clones: dict[tuple, _Clone] = {}
    taken = set(m.functions) | set(reserved)
    history = lineage(earlier)
    for call in calls:
        if call.problem:
            continue
        key = (call.callee, tuple((a.index, a.value) for a in call.const))
        if key not in clones:
            name = clone_name(call.callee, call.const, taken, history)
            taken.add(name)
            clones[key] = _Clone(name, call.callee, key, call)
        clones[key].sites.append(call)
    candidates = list(clones.values())

    measured: dict[str, dict] = {}  # clone -> its sizes for the log
    refused: dict[str, str] = {}
    if (max_growth is not None or flash_budget is not None) and candidates:
        if sizer is None:
            raise ValueError("a size budget needs a sizer")
        sizes = sizer(_scratch(_apply(m, candidates, where), candidates, where))
        counted: dict[str, set] = {}  # callee -> functions its admitted clones added
        for c in candidates:
            base = sizes.reach(c.callee)
            theirs = sizes.total(base)
            new = sizes.reach(c.name) - base - counted.get(c.callee, set())
            mine = sizes.total(new)
            total = sizes.total(counted.get(c.callee, set()) | new)
            measured[c.name] = dict(clone_bytes=mine, callee_bytes=theirs)
            measured[c.name]["added"] = new
            if max_growth is not None and total > max(max_growth * theirs, theirs + MIN_BUDGET_BYTES):
                refused[c.name] = (f"{BUDGET}: clones of {quote(c.callee)} would add {total} bytes > "
                                   f"{max_growth:g} x its {theirs} bytes")
            else:
                counted[c.callee] = counted.get(c.callee, set()) | new
        if flash_budget is not None:
            _flash_refusals(sizes, candidates, measured, refused, flash_budget)
        for v in measured.values():
            v.pop("added")
    accepted = [c for c in candidates if c.name not in refused]
    out = _apply(m, accepted, where) if accepted else m.text

    by_line = {call.line: c for c in candidates for call in c.sites}
    sites, seen = [], set()
    for n, call in enumerate(calls, first_number):
        c = by_line.get(call.line)
        common = dict(number=n, round=round, caller=call.caller, callee=call.callee, nargs=len(call.types),
                      const=tuple(call.const), call=call.number, shape_only=call.shape_only)
        if c is None:
            sites.append(Site(**common, status="refused", clone=None, reason=call.problem))
            continue
        sizes_of = measured.get(c.name, {})
        if c.name in refused:
            sites.append(Site(**common, status="refused", clone=None, reason=refused[c.name], **sizes_of))
        else:
            sites.append(Site(**common, status="shared" if c.name in seen else "kept", clone=c.name, **sizes_of))
            seen.add(c.name)
    return Specialized(mode, max_growth, out, tuple(sites), flash_budget)
