"""Inline assembly in the kernel library's IR becomes LLVM's own ARM intrinsics or plain IR.

llvmlite's LLVM has no ARM assembly parser, so an `asm` call in the library would kill the tool
when an object is emitted ("Inline asm not supported by this streamer"). CMSIS-NN's
Include/Internal/arm_nn_compiler.h spells SMLAD, SXTB16, SXTAB16 (with and without ROR),
PKHBT/PKHTB, SMULBB/SMULTT as GCC inline asm; this stage turns each such single-instruction
asm call of the clang output into the equivalent `llvm.arm.*` intrinsic (the calls clang makes
for the ACLE builtins) or plain IR (rotate, pack), and `leftover` names any asm call it could
not translate, so the build refuses it in one line instead of crashing later.

It works on the IR text of one translation unit (clang -S -emit-llvm), before linking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specializer.errors import UserError
from specializer.llvm import irtext
from specializer.llvm.passes import ModuleState, Pass

# Each mnemonic takes its register operands in the intrinsic's order (LLVM's IntrinsicsARM.td).
_UNARY = {"sxtb16", "uxtb16"}
_BINARY = {
    "qadd", "qsub", "qadd8", "qsub8", "qadd16", "qsub16", "qasx", "qsax",
    "shadd8", "shsub8", "shadd16", "shsub16", "shasx", "shsax",
    "uqadd8", "uqsub8", "uqadd16", "uqsub16", "uqasx", "uqsax",
    "uhadd8", "uhsub8", "uhadd16", "uhsub16", "uhasx", "uhsax",
    "sadd8", "ssub8", "sadd16", "ssub16", "sasx", "ssax",
    "uadd8", "usub8", "uadd16", "usub16", "uasx", "usax", "sel", "usad8",
    "smuad", "smuadx", "smusd", "smusdx", "smulbb", "smulbt", "smultb", "smultt", "smulwb", "smulwt",
    "sxtab16", "uxtab16",
}  # fmt: skip
_TERNARY = {"smlad", "smladx", "smlsd", "smlsdx", "smlabb", "smlabt", "smlatb", "smlatt",
            "smlawb", "smlawt", "usada8"}  # fmt: skip
# saturate to an immediate bit position: `ssat Rd, #n, Rm` is llvm.arm.ssat(Rm, n)
_SATURATE = {"ssat", "usat", "ssat16", "usat16"}
_REGISTER = {"r", "l"}
_IMMEDIATE = {"i", "n", "I", "J", "K", "L", "M"}
# Clobbers that change nothing once the asm is an intrinsic: flags (the intrinsics model the Q
# and GE bits themselves) and the memory barrier of a `volatile` asm with no memory operand.
_HARMLESS_CLOBBERS = {"~{cc}", "~{apsr}", "~{memory}"}

_CALL = re.compile(
    rf'^(?P<indent>\s*)(?P<res>{irtext.LOCAL}) = (?P<tail>(?:tail |notail )?)call (?P<ty>i32) '
    r'asm (?:sideeffect )?(?:alignstack )?(?:inteldialect )?(?:unwind )?'
    r'"(?P<tpl>[^"]*)", "(?P<cons>[^"]*)"\((?P<args>[^()]*)\)')
_ANY_ASM = re.compile(r'\b(?:call|invoke|callbr) [^"@%]*\basm (?:\w+ )*"(?P<tpl>[^"]*)"')


@dataclass(frozen=True)
class Operand:
    kind: str  # reg | imm
    value: str  # the IR value (register) or the integer (immediate)


@dataclass(frozen=True)
class Leftover:
    function: str
    template: str


@dataclass(frozen=True)
class Rewritten:
    text: str
    count: int  # asm calls replaced


def _template(raw: str) -> str:
    """The asm template, lower case, IR escapes (\\09 tab) and runs of blanks as one space."""
    t = raw.replace("\\09", " ").replace("\\0A", "\n").replace("\\0a", "\n")
    return " ".join(t.lower().split()) if "\n" not in t.strip() and ";" not in t else ""


def _args(text: str) -> list[str] | None:
    """The IR values of `i32 %a, i32 noundef 8`: the last word of each argument (i32 only)."""
    out = []
    for a in filter(None, (x.strip() for x in text.split(","))):
        words = a.split()
        if words[0] != "i32" or len(words) < 2:
            return None
        out.append(words[-1])
    return out


def _operands(template: str, constraints: str, args: list[str]) -> tuple[str, list[Operand], str | None] | None:
    """(mnemonic, operands, shift) of `mnem $0, $1, ..., [lsl|asr|ror] X`, or None if the asm is
    anything else. Operand $0 must be the one "=r" output; $k is args[k-1]."""
    cons = [c for c in constraints.split(",") if c not in _HARMLESS_CLOBBERS]
    if not cons or cons[0] not in ("=r", "=&r") or any(c.startswith(("=", "~", "*")) for c in cons[1:]):
        return None
    cons = cons[1:]
    if len(cons) != len(args):
        return None
    mnem, _, rest = template.partition(" ")
    fields = [f.strip() for f in rest.split(",")] if rest else []
    if not fields or fields[0] != "$0":
        return None
    shift = None
    m = re.fullmatch(r"(lsl|asr|ror) #?(\$\d+|\d+)", fields[-1])
    if m:  # the shift amount becomes the last operand
        shift, fields = m.group(1), [*fields[:-1], m.group(2)]
    ops: list[Operand] = []
    for f in fields[1:]:
        lit = re.fullmatch(r"#?(\d+)", f)
        if lit:
            ops.append(Operand("imm", lit.group(1)))
            continue
        ref = re.fullmatch(r"#?\$(\d+)", f)
        if not ref or not 1 <= int(ref.group(1)) <= len(args):
            return None
        k = int(ref.group(1)) - 1
        if cons[k] in _REGISTER:
            ops.append(Operand("reg", args[k]))
        elif cons[k] in _IMMEDIATE and re.fullmatch(r"-?\d+", args[k]):
            ops.append(Operand("imm", args[k]))
        else:
            return None
    return mnem, ops, shift


class _Emitter:
    """IR lines for one asm call; helper values are named %"asm.<n>.<what>" (unique per module)."""

    def __init__(self, indent: str, result: str, n: int, tail: str):
        self.indent, self.result, self.n, self.tail = indent, result, n, tail
        self.lines: list[str] = []
        self.intrinsics: set[str] = set()

    def tmp(self, what: str, rhs: str) -> str:
        name = f'%"asm.{self.n}.{what}"'
        self.lines.append(f"{self.indent}{name} = {rhs}")
        return name

    def intrinsic(self, name: str, args: list[str]) -> str:
        self.intrinsics.add(name)
        return f"{self.tail}call i32 @llvm.arm.{name}({', '.join('i32 ' + a for a in args)})"

    def rotate(self, value: str, amount: int) -> str:
        if amount % 32 == 0:
            return value
        self.intrinsics.add("fshr")
        return self.tmp("ror", f"{self.tail}call i32 @llvm.fshr.i32(i32 {value}, i32 {value}, i32 {amount % 32})")

    def done(self, rhs: str) -> list[str]:
        return [*self.lines, f"{self.indent}{self.result} = {rhs}"]


def _translate(e: _Emitter, mnem: str, ops: list[Operand], shift: str | None) -> list[str] | None:
    regs = [o.value for o in ops if o.kind == "reg"]
    kinds = "".join(o.kind[0] for o in ops)  # r / i per operand
    if mnem in _UNARY | _BINARY | _TERNARY and shift in (None, "ror"):
        arity = 1 if mnem in _UNARY else 2 if mnem in _BINARY else 3
        if kinds == "r" * arity and shift is None:
            return e.done(e.intrinsic(mnem, regs))
        # SXTB16 Rd, Rm, ROR #n and SXTAB16 Rd, Rn, Rm, ROR #n: the last register rotated first
        if mnem in ("sxtb16", "uxtb16", "sxtab16", "uxtab16") and kinds == "r" * arity + "i" and shift == "ror":
            rotated = e.rotate(regs[-1], int(ops[-1].value))
            return e.done(e.intrinsic(mnem, [*regs[:-1], rotated]))
        return None
    if mnem in _SATURATE and kinds == "ir" and shift is None:
        return e.done(e.intrinsic(mnem, [regs[0], ops[0].value]))
    if mnem in ("pkhbt", "pkhtb") and kinds in ("rr", "rri"):
        amount = int(ops[2].value) if kinds == "rri" else 0
        if (mnem == "pkhbt" and shift not in (None, "lsl")) or (mnem == "pkhtb" and shift not in (None, "asr")):
            return None
        if (shift is None) != (kinds == "rr") or not 0 <= amount <= (31 if mnem == "pkhbt" else 32):
            return None
        a, b = regs
        if mnem == "pkhbt":  # Rd = Rn[15:0] | (Rm << n)[31:16]
            lo = e.tmp("lo", f"and i32 {a}, 65535")
            sh = e.tmp("sh", f"shl i32 {b}, {amount}") if amount % 32 else b
            hi = e.tmp("hi", f"and i32 {sh}, -65536")
        else:  # Rd = Rn[31:16] | (Rm >> n, arithmetic)[15:0]; ASR #32 fills with the sign as ASR #31
            hi = e.tmp("hi", f"and i32 {a}, -65536")
            sh = e.tmp("sh", f"ashr i32 {b}, {min(amount, 31)}") if amount else b
            lo = e.tmp("lo", f"and i32 {sh}, 65535")
        return e.done(f"or i32 {lo}, {hi}")
    return None


def _declaration(name: str) -> str:
    if name == "fshr":
        return "declare i32 @llvm.fshr.i32(i32, i32, i32)"
    arity = 1 if name in _UNARY else 2 if name in _BINARY | _SATURATE else 3
    return f"declare i32 @llvm.arm.{name}({', '.join(['i32'] * arity)})"


def rewrite(text: str) -> Rewritten:
    """Replace every inline-asm call this stage understands; the rest is left as it was."""
    out: list[str] = []
    needed: set[str] = set()
    count = 0
    for line in text.split("\n"):
        m = _CALL.match(line)
        parsed = None
        if m:
            args = _args(m.group("args"))
            tpl = _template(m.group("tpl"))
            parsed = _operands(tpl, m.group("cons"), args) if args is not None and tpl else None
        lines = None
        if parsed:
            e = _Emitter(m.group("indent"), m.group("res"), count, m.group("tail"))
            lines = _translate(e, *parsed)
        if lines is None:
            out.append(line)
            continue
        out.extend(lines)
        needed |= e.intrinsics
        count += 1
    new = "\n".join(out)
    declared = set(irtext.declared(new))
    decls = [d for d in map(_declaration, sorted(needed)) if irtext.declare_name(d) not in declared]
    if decls:
        new = new.rstrip("\n") + "\n\n" + "\n".join(decls) + "\n"
    return Rewritten(new, count)


def leftover(text: str) -> list[Leftover]:
    """Every inline-asm call still in `text` (and module-level asm), with its function."""
    found, function = [], "(module level)"
    for line in text.split("\n"):
        defines = irtext.define_name(line)
        if defines is not None:
            function = defines
        elif line.startswith("}"):
            function = "(module level)"
        elif line.startswith("module asm "):
            found.append(Leftover("(module level)", line[len("module asm "):].strip().strip('"')))
        else:
            m = _ANY_ASM.search(line)
            if m:
                found.append(Leftover(function, " ".join(m.group("tpl").replace("\\09", " ").split())))
    return found


def lowered(text: str, where: str) -> str:
    """`rewrite` for a module a user gave: asm left over would abort llvmlite's LLVM when it emits
    code, so it is refused here in one line naming the function."""
    text = rewrite(text).text
    left = leftover(text)
    if left:
        raise UserError(f"{where}: function '{left[0].function}' uses inline assembly '{left[0].template}', "
                        "which llvmlite's LLVM cannot assemble; write it as LLVM IR or an llvm.arm.* intrinsic")
    return text


@dataclass(frozen=True)
class InlineAsm(Pass):
    name = "inline-asm"
    summary = ("CMSIS-NN's single-instruction DSP inline asm as LLVM's ARM intrinsics or plain IR; any other "
               "asm is an error (library/inline_asm.py; the kernel library and a module given to "
               "specialize get it on reading)")

    def run(self, state: ModuleState) -> None:
        state.set_text(lowered(state.as_text(), state.where))
