"""Define in IR what XLA's math intrinsics need beyond libjit's scalar `xla.F.f32` functions.

- Vector forms `<N x float> @xla.F.vNf32(<N x float>)`: Cortex-M4 has no vector unit, so each
  is N calls of the scalar `xla.F.f32` that libjit provides (libkernels/xla_math.c).
- `xla.fptrunc.f32.to.bf16` (and its vector forms): f32 -> bfloat16 rounded to nearest even, a
  NaN kept quiet, as XLA defines it; integer arithmetic, so no compiler-rt helper is needed.

`libjit_math` renames `llvm.exp.f32` (XLA's exp and its logistic's, which the ARM backend would turn
into newlib's expf, about 100-118 est. cycles) to `xla.exp.f32`, libjit's polynomial (about 67,
within 1 ulp: libkernels/xla_math.c), when a model is loaded, so every variant calls the same exp.
It also declares every scalar `xla.F.f32` nounwind (libjit's C functions are): XLA declares them
without attributes, and a call of a function that may unwind gives its caller an unwind table
entry with a personality routine, which pulled ARM's unwinder (about 3 KB) into the separate
variant's flash.
"""

from __future__ import annotations

import re

from specializer.llvm import irtext

FPTRUNC = "xla.fptrunc.f32.to.bf16"
# Symbols this module defines whenever a kernel declares them (the capture check counts them).
VECTOR_NAME = re.compile(r"^xla\.(\w+)\.v\d+f32$")
FPTRUNC_NAME = re.compile(r"^xla\.fptrunc\.(v\d+)?f32\.to\.(v\d+)?bf16$")


_LLVM_EXP = re.compile(r"@llvm\.exp\.((?:v\d+)?f32)\b")
_SCALAR_NAME = re.compile(r"^xla\.\w+\.f32$")


def libjit_math(module_text: str) -> str:
    """`module_text` with its `llvm.exp.f32` (and vector forms) called as `xla.exp.f32`, a
    declaration of a name already declared or defined dropped, every vector form given its wrapper
    (append_to) and the scalar math functions declared nounwind (the module docstring)."""
    if "@llvm.exp." not in module_text and "xla." not in module_text:  # @xla.F or @"xla.F"
        return module_text
    known = set(irtext.declared(module_text)) | set(irtext.defined(module_text))
    out = []
    for line in module_text.split("\n"):
        renamed = _LLVM_EXP.sub(r"@xla.exp.\1", line)
        if renamed != line and irtext.declare_name(line) and irtext.declare_name(renamed) in known:
            continue  # the module declares or defines xla.exp.* already (a wrapper: no second one)
        out.append(renamed)
    return "\n".join(_nounwind(ln) for ln in append_to("\n".join(out)).split("\n"))


def _nounwind(line: str) -> str:
    """A declaration of a scalar xla.F.f32 without attributes, declared nounwind."""
    name = irtext.declare_name(line)
    if name and _SCALAR_NAME.match(name) and line.rstrip().endswith(")"):
        return line.rstrip() + " nounwind"
    return line


def _fptrunc_scalar() -> list[str]:
    return [
        f"define linkonce_odr bfloat @{FPTRUNC}(float %x) {{",
        "  %b = bitcast float %x to i32",
        "  %nan = fcmp uno float %x, 0.0",
        "  %hi = lshr i32 %b, 16",
        "  %odd = and i32 %hi, 1",
        "  %bias = add i32 %odd, 32767",  # ties go to the even bf16
        "  %rounded = add i32 %b, %bias",
        "  %quiet = or i32 %b, 4194304",  # a NaN stays a NaN (the rounding could carry into inf)
        "  %sel = select i1 %nan, i32 %quiet, i32 %rounded",
        "  %top = lshr i32 %sel, 16",
        "  %t = trunc i32 %top to i16",
        "  %r = bitcast i16 %t to bfloat",
        "  ret bfloat %r",
        "}",
    ]


def _unrolled(name: str, n: int, elem_in: str, elem_out: str, scalar: str) -> list[str]:
    vin, vout = f"<{n} x {elem_in}>", f"<{n} x {elem_out}>"
    body = [f"define linkonce_odr {vout} @{name}({vin} %x) {{"]
    acc = "poison"
    for i in range(n):
        body.append(f"  %e{i} = extractelement {vin} %x, i32 {i}")
        body.append(f"  %r{i} = call {elem_out} @{scalar}({elem_in} %e{i})")
        body.append(f"  %v{i} = insertelement {vout} {acc}, {elem_out} %r{i}, i32 {i}")
        acc = f"%v{i}"
    return body + [f"  ret {vout} {acc}", "}"]


def vector_wrappers(module_text: str) -> str:
    """IR text defining every vector XLA math function and every bf16 truncation
    `module_text` declares (may be empty)."""
    out = []
    scalars = set()
    vectors, widths = set(), set()
    for s in map(irtext.signature, module_text.split("\n")):
        if s is None or s.keyword != "declare":
            continue
        ret = irtext.vector_type(s.head)
        if (m := VECTOR_NAME.match(s.name)) and ret and ret[1] == "float" and len(s.params) == 1 \
                and (irtext.vector_type(s.params[0]) or (0, ""))[1] == "float":
            vectors.add((str(ret[0]), m.group(1)))
        elif FPTRUNC_NAME.match(s.name) and (s.head == "bfloat" or (ret and ret[1] == "bfloat")):
            widths.add(str(ret[0]) if ret else "")
    for n_text, fn in sorted(vectors):
        n = int(n_text)
        out += _unrolled(f"xla.{fn}.v{n}f32", n, "float", "float", f"xla.{fn}.f32")
        scalars.add(f"declare float @xla.{fn}.f32(float)")
    if widths:
        out += _fptrunc_scalar()
        for w in sorted(int(x) for x in widths if x):
            out += _unrolled(f"xla.fptrunc.v{w}f32.to.v{w}bf16", w, "float", "bfloat", FPTRUNC)
    out += sorted(scalars)
    return "\n".join(out) + "\n" if out else ""


def append_to(module_text: str) -> str:
    """`module_text` with the wrappers it needs defined in it (their declarations dropped)."""
    wrappers = vector_wrappers(module_text)
    if not wrappers:
        return module_text
    defined = set(irtext.defined(wrappers))
    declared = set(irtext.declared(module_text))
    kept = [ln for ln in module_text.splitlines() if irtext.declare_name(ln) not in defined]
    extra = [ln for ln in wrappers.splitlines() if irtext.declare_name(ln) not in declared]
    return "\n".join(kept + [""] + extra) + "\n"


def defines(symbol: str) -> bool:
    """Whether vector_wrappers defines `symbol` when a kernel declares it (the vector forms
    need their scalar, which the caller checks separately)."""
    return bool(VECTOR_NAME.match(symbol) or FPTRUNC_NAME.match(symbol))
