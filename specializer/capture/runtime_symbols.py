"""Capture refuses, by op, a kernel that calls a function nothing at link time provides.

XLA's kernels declare what they call: its math intrinsics (`xla.F.f32`, provided by libjit),
libm names (`cbrtf`), and LLVM intrinsics, some of which the ARM backend turns into libm calls
(`llvm.atan2.f32` -> `atan2f`: Cortex-M4's FPv4 unit has no instruction for them). Each such
need is checked against what the firmware links: the libjit bitcode, newlib's libc, libm and
libnosys, and libgcc. A missing one is named with the HLO op behind it, at capture, instead of
as an undefined symbol at link.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from specializer import cache
from specializer.capture import intrinsics
from specializer.errors import UserError
from specializer.llvm import irtext
from specializer.target import TARGET
from specializer.tools import build_dir, find_tool

# LLVM intrinsics the ARM backend lowers to a C library call for Cortex-M4 (FPv4-SP: no double
# precision, no VRINT/VMAXNM, no transcendental instructions) -> the C function's base name.
LIBCALL_INTRINSICS = {
    n: n for n in ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp",
                   "exp2", "exp10", "log", "log2", "log10", "pow", "floor", "ceil", "trunc", "rint",
                   "nearbyint", "round", "roundeven", "lround", "llround", "lrint", "llrint", "ldexp",
                   "frexp", "modf", "sincos")
} | {"minnum": "fmin", "maxnum": "fmax", "fma": "fma", "sqrt": "sqrt"}
# ... but these are single-precision instructions (VFMA, VSQRT): a call only for f64
_F32_INSTRUCTIONS = {"fma", "sqrt"}
_POWI = {"f32": "__powisf2", "f64": "__powidf2"}

# The HLO opcodes whose elemental IR calls a function, by the function's base name, to name
# the op a missing function comes from.
OPCODES = {
    "rsqrt": ("rsqrt",), "log1p": ("log-plus-one",), "atan": ("atan2",), "atan2": ("atan2",),
    "tanh": ("tanh", "logistic"), "erf": ("erf",), "exp": ("exponential", "logistic"),
    "expm1": ("exponential-minus-one",), "sin": ("sine",), "cos": ("cosine",), "tan": ("tan",),
    "pow": ("power",), "cbrt": ("cbrt",), "log": ("log",), "fptrunc": ("convert",),
    "roundeven": ("round-nearest-even",), "round": ("round-nearest-afz",), "floor": ("floor",),
    "ceil": ("ceil",), "fmod": ("remainder",), "sqrt": ("sqrt",), "fmin": ("minimum",),
    "fmax": ("maximum",), "trunc": ("convert",), "powi": ("power",),
}


@dataclass(frozen=True)
class Need:
    symbol: str  # what the linker must find
    declared: str  # the name the kernel declares (an LLVM intrinsic, or the symbol itself)
    base: str  # the math function's name without type suffixes (for OPCODES)


def _float_suffix(name: str) -> str | None:
    for part in reversed(name.split(".")):
        m = re.fullmatch(r"(?:v\d+)?(f16|bf16|f32|f64)", part)
        if m:
            return "f32" if m.group(1) in ("f16", "bf16") else m.group(1)  # halves are promoted
    return None


def needs(module_text: str) -> list[Need]:
    """What the declarations of one (retargeted) kernel module need at link time."""
    out = []
    for name in irtext.declared(module_text):
        if name.startswith("llvm."):
            base = name.split(".")[1]
            ty = _float_suffix(name)
            if base == "powi" and ty:
                out.append(Need(_POWI[ty], name, "powi"))
            elif base in LIBCALL_INTRINSICS and ty and not (ty == "f32" and base in _F32_INSTRUCTIONS):
                c = LIBCALL_INTRINSICS[base]
                out.append(Need(c + ("f" if ty == "f32" else ""), name, base))
            continue  # other intrinsics become instructions or inline code
        if intrinsics.FPTRUNC_NAME.match(name):
            continue  # defined in IR by intrinsics.vector_wrappers
        v = intrinsics.VECTOR_NAME.match(name)
        if v:  # the IR wrapper calls the scalar form
            out.append(Need(f"xla.{v.group(1)}.f32", name, v.group(1)))
            continue
        x = re.fullmatch(r"xla\.(\w+)\..*", name)
        base = x.group(1) if x else re.sub(r"f$", "", name)
        out.append(Need(name, name, base))
    return out


def _gcc_file(flags: list[str], what: str) -> str:
    gcc = find_tool("arm-none-eabi-gcc")
    r = subprocess.run([gcc, *flags, what], capture_output=True, text=True)
    return r.stdout.strip()


@lru_cache(maxsize=None)
def _newlib_symbols() -> frozenset[str]:
    flags = TARGET.gcc_flags()
    archives = [_gcc_file(flags, f"-print-file-name={n}") for n in ("libc.a", "libm.a", "libnosys.a")]
    archives.append(_gcc_file(flags, "-print-libgcc-file-name"))
    nm = find_tool("arm-none-eabi-nm")

    def make(tmp: Path) -> None:  # nm over the archives: 1.4 s, once per build directory
        r = subprocess.run([nm, "-g", "--defined-only", "-P", *archives], capture_output=True, text=True)
        if r.returncode != 0:
            raise UserError(f"capture: cannot list newlib's symbols: {r.stderr.strip().splitlines()[:1]}")
        names = sorted({ln.split()[0] for ln in r.stdout.splitlines() if ln and not ln.endswith(":")})
        tmp.write_text("".join(f"{n}\n" for n in names))
    key = cache.digest(*archives, *(cache.file_digest(Path(a)) for a in archives))
    return frozenset(cache.made(build_dir() / "symbols" / f"newlib-{key[:24]}.txt", make).read_text().split())


@lru_cache(maxsize=None)
def _libjit_symbols() -> frozenset[str]:
    from specializer.llvm import module
    from specializer.library import libjit
    mod = module.parse_bitcode(libjit.build().bitcode)
    return frozenset(f.name for f in mod.functions if not f.is_declaration)


def provided() -> frozenset[str]:
    """Every function the firmware link can resolve: libjit, newlib's libc/libm/libnosys, libgcc."""
    return _libjit_symbols() | _newlib_symbols()


def check(kernels: dict[str, str], op_of_kernel) -> None:
    """Refuse the first kernel (by name, in order) that needs a function nothing provides.

    `kernels`: kernel module name -> retargeted text; `op_of_kernel(kernel, base)` -> a phrase
    naming the HLO op (e.g. "op 'atan2' (HLO %atan2.3 in fusion.2)")."""
    have = provided()
    for kernel, text in kernels.items():
        for need in needs(text):
            if need.symbol in have:
                continue
            via = "" if need.declared == need.symbol else f" (for {need.declared})"
            raise UserError(f"capture: {op_of_kernel(kernel, need.base)} needs {need.symbol}{via}, which "
                            "neither libjit nor newlib's libc/libm provides")
