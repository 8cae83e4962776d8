"""Every operation on LLVM IR as text: names and their quoting, types, define/declare and call
lines, argument lists, globals and their initializers, attributes, metadata, sections.

Most of the tool works on modules through LLVM; these are the places where text is the right
form (a model's text before it is linked, the diff-oriented output, artifacts people read).
The text is LLVM's own printing (one instruction a line, canonical spacing), which is what the
patterns here expect. The identifier syntax is spelled once, in NAME; every pattern that names
a value is built from it, and no other module spells it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# --------------------------------------------------------------------------- names

# A name as LLVM prints it after `@` or `%`: bare, or quoted with `\XX` escapes. Not a group.
NAME = r'(?:"(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+)'
GLOBAL = "@" + NAME  # a global value: `@f`, `@"a b"`
LOCAL = "%" + NAME  # a local value, block or named type: `%x`, `%0`, `%"a b"`
BARE_LOCAL = r"%[-a-zA-Z$._0-9]+"  # a local that needs no quotes (one a rewrite may append to)
_BARE_NAME = re.compile(r"^[-a-zA-Z$._][-a-zA-Z$._0-9]*$")
_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})")
_GLOBAL_REF = re.compile(f"@({NAME})")


def quote(name: str) -> str:
    """`@name` as LLVM prints it (quoted when it has characters outside the bare set)."""
    if _BARE_NAME.match(name):
        return "@" + name
    return '@"' + name.replace("\\", "\\5C").replace('"', "\\22") + '"'


def unquote(ref: str) -> str:
    """A name as printed after `@` (`foo`, `"a b\\22"`) -> the name itself."""
    if ref.startswith('"'):
        return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), ref[1:-1])
    return ref


def global_refs(text: str) -> list[str]:
    """The globals `text` names (`@f`, `@"a b"`), in order, as names."""
    return [unquote(r) for r in _GLOBAL_REF.findall(text)]


_GLOBAL_ARG = re.compile(f"^ptr @({NAME})$")


def global_arg(arg: str) -> str | None:
    """The global an argument `ptr @g` passes (None for any other argument)."""
    m = _GLOBAL_ARG.match(arg)
    return unquote(m.group(1)) if m else None


# --------------------------------------------------------------------------- types

_SCALAR_TYPE = re.compile(r"^(i\d+|half|bfloat|float|double)$")
_ARRAY_TYPE = re.compile(r"^\[(\d+) x (.*)\]$")
_VECTOR_TYPE = re.compile(r"^<(\d+) x ([^<>]+)>$")
_TYPE_DEF = re.compile(f"^{LOCAL} = type ")


def is_scalar_type(ty: str) -> bool:
    """An integer or floating-point type (what a constant scalar argument has)."""
    return _SCALAR_TYPE.match(ty) is not None


def array_dims(ty: str) -> tuple[list[str], str]:
    """`[16 x [32 x float]]` -> (["16", "32"], "float"); any other type -> ([], the type)."""
    dims = []
    while m := _ARRAY_TYPE.match(ty):
        dims.append(m.group(1))
        ty = m.group(2)
    return dims, ty


def vector_type(ty: str) -> tuple[int, str] | None:
    """`<4 x float>` -> (4, "float"); None for any other type."""
    m = _VECTOR_TYPE.match(ty)
    return (int(m.group(1)), m.group(2)) if m else None


def type_defs(lines: list[str]) -> list[str]:
    """The named type definitions (`%T = type {...}`) among `lines`."""
    return [ln for ln in lines if _TYPE_DEF.match(ln)]


# --------------------------------------------------------------------------- argument lists


def split_args(line: str, open_paren: int) -> tuple[list[str], int]:
    """The top-level comma-separated pieces inside the brackets that open at `open_paren` (any of
    `([{<`), and the column just past the one that closes them; brackets and commas inside
    quoted strings do not count."""
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
    raise ValueError(f"unbalanced brackets: {line.strip()}")


# --------------------------------------------------------------------------- define and declare lines

_DEFINE = re.compile(f"^define [^@]*@({NAME})\\(")
_DECLARE = re.compile(f"^declare\\b[^@]*@({NAME})\\(")
_CALLING_CONV = re.compile(r"(?:^| )([a-z_0-9]+cc|cc \d+) ")
_ATTR_GROUP_REF = re.compile(r"#(\d+)")


def define_name(line: str) -> str | None:
    """The function a `define` line defines (None for any other line)."""
    m = _DEFINE.match(line)
    return unquote(m.group(1)) if m else None


def declare_name(line: str) -> str | None:
    """The function a `declare` line declares (None for any other line)."""
    m = _DECLARE.match(line)
    return unquote(m.group(1)) if m else None


def defined(text: str) -> list[str]:
    """The functions `text` defines, in module order."""
    return [n for n in map(define_name, text.split("\n")) if n is not None]


def declared(text: str) -> list[str]:
    """The functions `text` declares (and does not define), in module order."""
    return [n for n in map(declare_name, text.split("\n")) if n is not None]


@dataclass(frozen=True)
class Signature:
    """A `define` or `declare` line, read."""
    keyword: str  # "define" | "declare"
    head: str  # what comes between the keyword and the name: linkage, calling convention, return type
    name: str
    name_at: int  # column of the `@`
    params: list[str]  # parameter texts as written ("ptr noalias %0", "i32", "...")
    params_at: int  # column of the opening parenthesis
    end: int  # column just past the closing parenthesis


def signature(line: str) -> Signature | None:
    """The `define`/`declare` line `line`, read (None for any other line)."""
    m = _DEFINE.match(line) or _DECLARE.match(line)
    if m is None:
        return None
    keyword = line.split(" ", 1)[0]
    params, end = split_args(line, m.end() - 1)
    name_at = m.start(1) - 1
    return Signature(keyword, line[len(keyword):name_at].strip(), unquote(m.group(1)), name_at, params,
                     m.end() - 1, end)


_LINKAGE = re.compile(r"\b(?:private|internal|available_externally|linkonce_odr|linkonce|weak_odr|weak|common)\b ?")


def declaration(define: str) -> str:
    """The `declare` line of the function a `define` line starts (linkage, section, alignment and
    body dropped; calling convention, types and attributes kept: its callers are coded the same)."""
    s = signature(define)
    head = _LINKAGE.sub("", s.head).strip()
    tail = DEFINE_TAIL.match(define[s.end:]).group(1)
    return f"declare {head} {define[s.name_at:s.end]}{tail}".replace("  ", " ")


def declare_only(lines: list[str], spans: dict, names) -> None:
    """Turn the functions `names` (spans: function_spans of `lines`) into declarations in place;
    the lines keep their count, so the other spans stay right."""
    for f in names:
        a, b = spans[f]
        lines[a:b + 1] = [declaration(lines[a])] + [""] * (b - a)


def calling_convention(line: str) -> str:
    """The calling convention keyword of a `define` line with a trailing space ('' for C's)."""
    m = _CALLING_CONV.search(line[len("define"):signature(line).name_at] + " ")
    return m.group(1) + " " if m else ""


_ATTRIBUTE_GROUP = re.compile(r"^attributes #(\d+) = \{ (.*) \}$", re.M)


def attribute_group(line: str) -> tuple[int, str] | None:
    """`attributes #3 = { nounwind ... }` -> (3, "nounwind ..."); None for any other line."""
    m = _ATTRIBUTE_GROUP.match(line)
    return (int(m.group(1)), m.group(2)) if m else None


def attribute_groups(text: str) -> dict[int, str]:
    """Every attribute group of the module `text`: number -> its attributes."""
    return {int(m.group(1)): m.group(2) for m in _ATTRIBUTE_GROUP.finditer(text)}


def function_attributes(line: str, groups: dict[int, str]) -> str:
    """The function attributes of a `define`/`declare` line: its groups' (`#N`, after the
    parameters) written out."""
    refs = _ATTR_GROUP_REF.findall(line[signature(line).end:])
    return " ".join(groups.get(int(r), "") for r in refs).strip()


ATTRIBUTE_REF = re.compile(r" #(\d+)\b")  # a use of attribute group N (in a define or call line)


def has_keyword(text: str, *words: str) -> bool:
    """Whether one of `words` stands as a word of its own in `text` (attributes, a type)."""
    return re.search(rf"\b(?:{'|'.join(map(re.escape, words))})\b", text) is not None


def without_attributes(attrs: str, keywords: tuple[str, ...] = (), strings: tuple[str, ...] = ()) -> str:
    """`attrs` without the attributes `keywords` (one written `memory(...)` with whatever
    arguments it has) and the string attributes `strings` (with their values:
    `"alloc-family"="malloc"`)."""
    words = [re.escape(k[:-5]) + r"\([^)]*\)" if k.endswith("(...)") else re.escape(k) for k in keywords]
    alternatives = [rf"\s*\b(?:{'|'.join(words)})"] if words else []
    alternatives += [rf'\s*"{re.escape(s)}"(?:="[^"]*")?' for s in strings]
    return re.sub("|".join(alternatives), "", attrs) if alternatives else attrs


def argument_memory(attrs: str) -> str | None:
    """What a function's `memory(...)` attribute lets it do to the memory its arguments point to
    (`read`, `write`, `readwrite`, `none`); None without the attribute."""
    m = re.search(r"\bmemory\(([^)]*)\)", attrs)
    if not m:
        return None
    parts = [p.strip() for p in m.group(1).split(",")]
    argmem = next((p.split(":")[1].strip() for p in parts if p.startswith("argmem:")), None)
    return argmem or next((p for p in parts if ":" not in p), "readwrite")


# --------------------------------------------------------------------------- the module's pieces


def _body_end(lines: list[str], define: int) -> int:
    """The line of the `}` that closes the function whose `define` is line `define`."""
    j = define
    while lines[j] != "}":
        j += 1
    return j


def function_spans(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Function name -> (line of its `define`, line of its closing `}`)."""
    spans, i = {}, 0
    while i < len(lines):
        if lines[i].startswith("define "):
            end = _body_end(lines, i)
            spans[define_name(lines[i])] = (i, end)
            i = end
        i += 1
    return spans


def pieces(text: str):
    """The top-level pieces of LLVM's printed module, (kind, lines), in module order: "define"
    (a whole function), "declare", "global", "type", "attributes", "metadata", "header"
    (target lines, module asm, comdats). Comments and blank lines are left out."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("define "):
            j = _body_end(lines, i)
            yield "define", lines[i:j + 1]
            i = j + 1
            continue
        if line.startswith("declare "):
            yield "declare", [line]
        elif line.startswith("@"):
            yield "global", [line]
        elif line.startswith("%") and " = type " in line:
            yield "type", [line]
        elif line.startswith("attributes #"):
            yield "attributes", [line]
        elif line.startswith("!"):
            yield "metadata", [line]
        elif line.startswith(("target ", "module asm", "$")):
            yield "header", [line]
        i += 1


_INSTRUCTION_START = re.compile(r"  [^ \]]")


def instruction_starts(lines: list[str], start: int, end: int) -> list[int]:
    """The first line of each instruction of the body between lines `start` (its `define`) and
    `end` (its `}`): a switch continues on lines of its own (cases indented further, then `  ]`)."""
    return [i for i in range(start + 1, end) if _INSTRUCTION_START.match(lines[i])]

_MODULE_ID = re.compile(r"; ModuleID = '([^'\n]*)'")
_TRIPLE = re.compile(r'^target triple = "([^"]*)"', re.M)


def module_id(text: str) -> str | None:
    """The `; ModuleID = '...'` LLVM prints first (None without one)."""
    m = _MODULE_ID.match(text)
    return m.group(1) if m else None


def target_triple(text: str) -> str | None:
    m = _TRIPLE.search(text)
    return m.group(1) if m else None


# --------------------------------------------------------------------------- globals

_GLOBAL_DEF = re.compile(f"^@({NAME}) = ((?:[a-z_]+ )*)(global|constant) ")
_GLOBAL_LINE = re.compile(f"^@({NAME}) = ")


@dataclass(frozen=True)
class GlobalDef:
    """A global variable's line, read up to its initializer."""
    name: str
    keywords: tuple[str, ...]  # what comes between `=` and global/constant: linkage, unnamed_addr, ...
    kind: str  # "global" | "constant"
    type: str
    init_at: int  # column where the initializer starts (past the line's end for a declaration)


def global_def(line: str) -> GlobalDef | None:
    """The global variable `line` defines or declares (None for any other line)."""
    m = _GLOBAL_DEF.match(line)
    if m is None:
        return None
    at = m.end()
    end = split_args(line, at)[1] if line[at:at + 1] in ("[", "{", "<") else _word_end(line, at)
    return GlobalDef(unquote(m.group(1)), tuple(m.group(2).split()), m.group(3), line[at:end], end + 1)


def _word_end(line: str, at: int) -> int:
    end = line.find(" ", at)
    return len(line) if end < 0 else end


def is_constant_def(line: str) -> bool:
    """A global constant's line (only its start is read: weights are megabytes a line)."""
    m = _GLOBAL_DEF.match(line[:300])
    return m is not None and m.group(3) == "constant"


def global_name(line: str) -> str | None:
    """The global a line defines or declares (`@g = ...`: variables and aliases)."""
    m = _GLOBAL_LINE.match(line)
    return unquote(m.group(1)) if m else None


def global_lines(lines: list[str]) -> dict[str, int]:
    """Global name -> the line that defines it (variables and aliases)."""
    out = {}
    for i, line in enumerate(lines):
        name = global_name(line) if line.startswith("@") else None
        if name is not None:
            out[name] = i
    return out


def array_elements(init: str, elem: str) -> list[str] | None:
    """The values of a flat array initializer `[elem a, elem b, ...]` ([] for
    zeroinitializer; None for any other initializer)."""
    if init.startswith("zeroinitializer"):
        return []
    if not init.startswith("["):
        return None
    items = init[1:init.index("]")].split(", ")
    if not all(i.startswith(elem + " ") for i in items):
        return None
    return [i[len(elem) + 1:] for i in items]


_BYTE_ESCAPE = re.compile(rb"\\(\\|[0-9A-Fa-f]{2})")


def byte_elements(init: str, count: int) -> bytes | None:
    """The bytes of an `[count x i8]` initializer: `c"..."` (a byte escaped as `\\XX`, or `\\\\`),
    `[i8 a, ...]` or zeroinitializer; None for any other initializer or length."""
    if init.startswith('c"'):
        end = init.index('"', 2)
        data = _BYTE_ESCAPE.sub(lambda m: b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1), 16)]),
                                init[2:end].encode("latin-1"))
    else:
        items = array_elements(init, "i8")
        if items is None:
            return None
        data = bytes(count) if items == [] else bytes(int(v) & 0xFF for v in items)
    return data if len(data) == count else None


# what may follow a global's initializer, each after ", " (LLVM's printed order)
_AFTER_INITIALIZER = re.compile(r'^(align \d+|section "[^"]*"|partition "[^"]*"|comdat(\(\$[^)]*\))?|'
                                r'code_model "[^"]*"|no_sanitize\w*|sanitize_\w+|![-a-zA-Z$._0-9]+ !\S+)$')
_GROUP_AT_END = re.compile(r" #\d+$")


def initializer_end(line: str, start: int) -> int:
    """Where the initializer starting at `start` ends: before the trailing `, align 4`-style
    pieces (peeled off from the end, so a megabyte of array text is never scanned in Python)."""
    group = _GROUP_AT_END.search(line[-16:])  # an attribute group, after everything else
    end = len(line) - (len(group.group(0)) if group else 0)
    while True:
        at = line.rfind(", ", start, end)
        if at < 0 or not _AFTER_INITIALIZER.match(line[at + 2:end]):
            return end
        end = at


# --------------------------------------------------------------------------- instructions

# a call instruction whose callee is named: `  [%r = ][tail ]call <type> @f(`
_CALL = re.compile(f"^  (?:{LOCAL} = )?(?:(?:tail|musttail|notail) )?call [^@]*@({NAME})\\(")
_ALLOCA = re.compile(f"^\\s*({LOCAL}) = alloca (.+?)(?:, i32 1)?(?:, align (\\d+))?(?:, !.*)?$")
_I8_GEP = re.compile(f"= getelementptr (?:(?:inbounds|nuw|nusw) )*i8, ptr {LOCAL}, i32 (-?\\d+)(?:, !.*)?$")
# a constant address into a global: `getelementptr inbounds nuw (i8, ptr @g, i32 64)`
CONST_GEP = re.compile(f"getelementptr (?:(?:inbounds|nuw|nusw) )*\\(i8, ptr (?P<base>{GLOBAL}), "
                       r"(?P<index>i32|i64) (?P<offset>-?\d+)\)")


def callee(line: str) -> str | None:
    """The function a call instruction line calls directly (None for any other line)."""
    m = _CALL.match(line)
    return unquote(m.group(1)) if m else None


@dataclass(frozen=True)
class Alloca:
    name: str  # as printed: "%buf"
    type: str
    align: int | None


def alloca(inst: str) -> Alloca | None:
    """An `alloca` of one object, read (None for any other instruction, and for an alloca of a
    counted or run-time number of objects: `alloca i16, i32 %n`, a C variable-length array)."""
    m = _ALLOCA.match(inst)
    if not m or _COUNTED.search(m.group(2)):
        return None
    return Alloca(m.group(1), m.group(2), int(m.group(3)) if m.group(3) else None)


_COUNTED = re.compile(r",\s*i(?:8|16|32|64)\s+(?:%|-?\d)")


def i8_gep_offset(inst: str) -> int | None:
    """The offset of a `getelementptr i8, ptr %p, i32 N` instruction (None for any other)."""
    m = _I8_GEP.search(inst)
    return int(m.group(1)) if m else None


_NULL_BASED = re.compile(r"^ptr (null|.*\(.*\bptr null\b.*\)|inttoptr \(i\d+ 0 to ptr\))$")


def is_null_based(value: str) -> bool:
    """A constant pointer at (or computed from) address 0: `ptr null`, a GEP from null, inttoptr 0."""
    return _NULL_BASED.match(value) is not None


def global_plus_offset(value: str) -> str:
    """`value` with each constant address into a global written `@g+64`."""
    return CONST_GEP.sub(lambda g: f"{g.group('base')}+{g.group('offset')}", value)


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
            m = _I32.match(a)
            if not m:
                return None
            out.append(int(m.group(1)))
        return out if len(out) == count else None


_I32 = re.compile(r"^i32 (-?\d+)$")


def direct_calls(lines: list[str], callees: tuple[str, ...]):
    """The call instructions (not comments) of `lines` that call one of `callees` directly."""
    pattern = re.compile(r"call [^@(]*@(" + "|".join(re.escape(quote(c)[1:]) for c in callees) + r")\(")
    for i, line in enumerate(lines):
        m = pattern.search(line) if line.startswith("  ") else None
        if m:
            args, end = split_args(line, m.end() - 1)
            yield DirectCall(i, unquote(m.group(1)), args, m.start(), end)


def call_args(line: str, fn: str) -> tuple[int, list[str], int] | None:
    """The call of `fn` on the call line `line`: (column of `@fn`, argument texts, column just
    past the closing parenthesis); None when the line does not call it by name."""
    token = quote(fn) + "("
    at = line.find(token, line.find("call "))
    if at < 0:
        return None
    args, end = split_args(line, at + len(token) - 1)
    return at, args, end


def has_operand_bundles(line: str, args_end: int) -> bool:
    """Whether the call whose arguments end at `args_end` has operand bundles (`[ "deopt"(...) ]`)."""
    return re.search(r"\[\s*\"", line[args_end:]) is not None


def replace_call(line: str, callee_at: int, args_end: int, fn: str, args: list[str]) -> str:
    """The call line calling `fn` with `args` instead; its metadata attachments stay, its
    call-site attributes (which belonged to the old callee) go."""
    tail = line[args_end:]
    md = tail.find(", !")
    return line[:callee_at] + f"{quote(fn)}({', '.join(args)})" + (tail[md:] if md >= 0 else "")


def declares_or_defines(text: str, fn: str) -> bool:
    """Whether the module `text` has a `declare` or `define` line for the function `fn`."""
    return any((define_name(ln) or declare_name(ln)) == fn
               for ln in text.split("\n") if ln.startswith(("declare ", "define ")))


# --------------------------------------------------------------------------- metadata

METADATA_REF = re.compile(r"!(\d+)\b")  # a use of the numbered metadata node N
_METADATA_NODE = re.compile(r"^!(\d+) = (.*)$", re.M)
_METADATA_ID = re.compile(r"^!(\d+) = ", re.M)


def metadata_node(line: str) -> tuple[str, str] | None:
    """`!12 = !{i32 3}` -> ("12", "!{i32 3}"); None for any other line."""
    m = _METADATA_NODE.match(line)
    return (m.group(1), m.group(2)) if m else None


def metadata_nodes(text: str) -> dict[int, str]:
    """Every numbered metadata node of the module `text`: number -> its content."""
    return {int(m.group(1)): m.group(2) for m in _METADATA_NODE.finditer(text)}


def metadata_int(content: str) -> int | None:
    """`!{i32 5}` -> 5; None for any other node."""
    m = _INT_NODE.match(content)
    return int(m.group(1)) if m else None


_INT_NODE = re.compile(r"^!\{i32 (\d+)\}$")


def next_metadata_id(text: str) -> int:
    """The first metadata number the module `text` does not use."""
    return max((int(m.group(1)) for m in _METADATA_ID.finditer(text)), default=-1) + 1


def attach(line: str, kind: str, node: int) -> str:
    """The instruction line with `!kind !node` attached."""
    return f"{line}, !{kind} !{node}"


def attachment_pattern(kind: str) -> re.Pattern:
    """What finds the node number of a `!kind !N` attachment on an instruction line."""
    return re.compile(f", !{re.escape(kind)} !(\\d+)")


def named_metadata(text: str, name: str) -> re.Match | None:
    """The line `!name = !{!1, !2}` of the module `text`; group 1 is its list."""
    return re.search(f"^!{re.escape(name)} = !\\{{(.*)\\}}$", text, re.M)


# --------------------------------------------------------------------------- strings


def outside_strings(line: str, pattern: re.Pattern, repl) -> str:
    """`pattern.sub(repl, ...)` on the parts of `line` outside string literals (LLVM escapes a
    quote inside a string as \\22, so quotes pair up)."""
    parts = line.split('"')
    for i in range(0, len(parts), 2):
        parts[i] = pattern.sub(repl, parts[i])
    return '"'.join(parts)


# --------------------------------------------------------------------------- sections


DEFINE_TAIL = re.compile(r"^((?: (?:local_)?unnamed_addr)?(?: addrspace\(\d+\))?(?: #\d+)?)")
_GLOBAL_TAIL = re.compile(r"(?:, align \d+)?(?:, ![-\w.]+ !\d+)*(?: #\d+)?$")


def with_sections(text: str, data: bool = True) -> str:
    """Each function (and with `data`, each global variable) in a section of its own (.text.<f>,
    .rodata.<g>, ...).

    llvmlite's TargetMachine has no -ffunction-sections switch, so the sections are named in
    the IR; GNU ld's --gc-sections then drops whatever the entry points do not reach."""
    out = []
    for line in text.split("\n"):
        if line.startswith("define ") and " section \"" not in line:
            s = signature(line)
            tail = DEFINE_TAIL.match(line[s.end:]).end() + s.end
            line = line[:tail] + f' section ".text.{_plain(s.name)}"' + line[tail:]
        elif data:
            d = global_def(line) if line.startswith("@") else None
            if d and ", section \"" not in line:
                if d.kind == "constant":
                    kind = ".rodata"
                else:
                    kind = ".bss" if line[d.init_at - 1:].startswith(" zeroinitializer") else ".data"
                tail = _GLOBAL_TAIL.search(line).start()
                line = line[:tail] + f', section "{kind}.{_plain(d.name)}"' + line[tail:]
        out.append(line)
    return "\n".join(out)


def _plain(name: str) -> str:
    return re.sub(r'[^-\w.$]', "_", name)


# --------------------------------------------------------------------------- module-level lines

_TRIPLE_LINE = re.compile(r'^target triple = "[^"]*"\n?', re.M)
_LAYOUT_LINE = re.compile(r'^target datalayout = "[^"]*"\n?', re.M)
_ATTR_GROUP_LINE = re.compile(r"^(attributes #\d+ = \{)([^}]*)(\})", re.M)
_MODULE_FLAGS = re.compile(r"^!llvm\.module\.flags = !\{([^}]*)\}\n?", re.M)


def set_target(text: str, datalayout: str, triple: str) -> str:
    """`text` with this datalayout and triple in place of whatever it had, where LLVM prints them
    (after the ModuleID and source_filename lines)."""
    text = _TRIPLE_LINE.sub("", _LAYOUT_LINE.sub("", text))
    lines = text.split("\n")
    at = 0
    while at < len(lines) and (lines[at].startswith("; ModuleID") or lines[at].startswith("source_filename")):
        at += 1
    return "\n".join(lines[:at] + [f'target datalayout = "{datalayout}"\ntarget triple = "{triple}"'] + lines[at:])


def respell_target(text: str, datalayout: str, triple: str) -> str:
    """This datalayout and triple on the line of the module's triple, every other line where it was
    (so errors LLVM reports later point into the user's file)."""
    text = re.sub(r'^target datalayout = "[^"]*"', "", text, flags=re.M)
    return re.sub(r'^target triple = "[^"]*"', f'target datalayout = "{datalayout}" target triple = "{triple}"',
                  text, count=1, flags=re.M)


def rewrite_attribute_groups(text: str, rewrite) -> str:
    """Each `attributes #N = { ... }` body through `rewrite(body) -> body`; a group left empty is
    removed with every `#N` naming it."""
    emptied = []

    def one(m: re.Match) -> str:
        body = rewrite(m.group(2)).strip()
        if body:
            return f"{m.group(1)} {body} {m.group(3)}"
        emptied.append(re.search(r"#\d+", m.group(1)).group(0))
        return ""

    text = _ATTR_GROUP_LINE.sub(one, text)
    for ref in emptied:
        text = re.sub(r" " + ref + r"\b", "", text)
    return text


def without_metadata(text: str, kind: str) -> str:
    """Every `, !kind !N` attachment dropped (e.g. kind "invariant.load")."""
    return re.sub(r",\s*!" + re.escape(kind) + r"\s+!\d+", "", text)


def without_module_flag(text: str, key: str) -> str:
    """The module flag `key` dropped: its node, and its entry in !llvm.module.flags (the list too
    when it was the only one)."""
    node = re.search(r'^(!\d+) = !\{i32 \d+, !"' + re.escape(key) + r'", [^}]*\}\n?', text, re.M)
    if node is None:
        return text
    text = text[: node.start()] + text[node.end() :]

    def keep(m: re.Match) -> str:
        refs = [r.strip() for r in m.group(1).split(",") if r.strip() and r.strip() != node.group(1)]
        return f"!llvm.module.flags = !{{{', '.join(refs)}}}\n" if refs else ""

    return _MODULE_FLAGS.sub(keep, text)
