"""Build (and cache) the libjit kernel library as ONE thumbv7em bitcode file.

Sources: libkernels/*.c (the `libjit_*` entry points and XLA's math helpers), the CMSIS-DSP
sources listed in libkernels/cmsis_dsp_sources.txt, and the CMSIS-NN API (the shim or a real
checkout, see cmsis.py). Rebuilt when any source, flag or the CMSIS-NN choice changes; made
once by processes sharing the build directory (cache.py).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from specializer import cache
from specializer.library import cmsis, cmsis_checkout, inline_asm
from specializer.errors import UserError
from specializer.target import TARGET
from specializer.tools import build_dir, find_tool, shipped

CFLAGS = TARGET.clang_flags()


@dataclass(frozen=True)
class Library:
    bitcode: Path
    sources: tuple[Path, ...]
    cmsis_nn: str  # which CMSIS-NN the library was built with


def _newlib_include() -> list[str]:
    # clang needs newlib's headers (math.h, string.h) for the bare-metal target.
    gcc = find_tool("arm-none-eabi-gcc")
    out = subprocess.run([gcc, "-print-sysroot"], capture_output=True, text=True).stdout.strip()
    inc = Path(out or "/usr/lib/arm-none-eabi") / "include"
    if not inc.is_dir():
        raise UserError("newlib headers not found: install them with 'apt-get install libnewlib-arm-none-eabi'")
    return ["-isystem", str(inc)]


def _dsp_sources(dsp: Path, src_dir: Path) -> list[Path]:
    listed = src_dir / "cmsis_dsp_sources.txt"
    names = [ln.split("#")[0].strip() for ln in listed.read_text().splitlines()] if listed.is_file() else []
    out = []
    for n in filter(None, names):
        p = dsp / "Source" / n
        if not p.is_file():
            raise UserError(f"{listed}: CMSIS-DSP {cmsis.CMSIS_DSP_VERSION} has no Source/{n}")
        out.append(p)
    return out


def _includes(src_dir: Path, nn: cmsis.CmsisNN, dsp: Path) -> list[Path]:
    return [src_dir, *nn.include_dirs, dsp / "Include", dsp / "PrivateInclude"]


def compile_flags(src_dir: Path, nn: cmsis.CmsisNN, dsp: Path) -> list[str]:
    """clang's flags for every library source (and the API check of a CMSIS-NN checkout)."""
    # libkernels/libjit_cmsis_nn.h picks the checkout's headers or the shim's
    defines = ["-DLIBJIT_CMSIS_NN_CHECKOUT"] if nn.kind == "checkout" else []
    return CFLAGS + defines + [f"-I{d}" for d in _includes(src_dir, nn, dsp)] + _newlib_include()


def build(src_dir: Path | None = None, cmsis_nn_path: str | None = None, nn: cmsis.CmsisNN | None = None) -> Library:
    """Compile the kernel sources to bitcode and link them into one module (cached); against `nn`,
    else the CMSIS-NN `cmsis_nn_path` (or $SPECIALIZER_CMSIS_NN) names."""
    src_dir = src_dir or shipped("libkernels")
    dsp = cmsis.cmsis_dsp()
    nn = nn or cmsis.cmsis_nn(cmsis_nn_path)
    own = sorted(src_dir.glob("*.c"))
    sources = tuple(own + _dsp_sources(dsp, src_dir) + list(nn.sources))
    clang = find_tool("clang-19")
    link = find_tool("llvm-link-19")
    includes = _includes(src_dir, nn, dsp)
    flags = compile_flags(src_dir, nn, dsp)
    key = hashlib.sha256()
    for s in sources:
        key.update(str(s).encode() + b"\0" + s.read_bytes())
    for d in includes:  # headers count too
        for h in sorted(Path(d).glob("**/*.h")):
            key.update(str(h).encode() + b"\0" + h.read_bytes())
    key.update(" ".join(flags).encode())
    key.update(Path(inline_asm.__file__).read_bytes())  # the asm rewrite shapes the bitcode too
    out_dir = build_dir() / "libjit"
    out_dir.mkdir(parents=True, exist_ok=True)
    digest = key.hexdigest()[:16]
    out = out_dir / f"libkernels-{digest}.bc"
    if nn.kind == "checkout":  # the API captured models call (cached or not: one compile, ~0.1 s)
        cmsis_checkout.check(nn.root, clang, flags)
    if out.exists():  # published whole (cache.py): if it is there, all of it is
        return Library(out, sources, nn.describe())
    with cache.making(out):  # processes sharing the build directory compile it once
        if not out.exists():
            _compile(sources, clang, link, flags, out)
    return Library(out, sources, nn.describe())


def _compile(sources: tuple, clang: str, link: str, flags: list[str], out: Path) -> None:
    """Every source to bitcode in a private directory, linked under a private name, renamed to `out`."""
    with tempfile.TemporaryDirectory(prefix=f".{out.stem}.", dir=out.parent) as obj_dir:
        def compile_one(i_s):
            i, s = i_s
            ll = Path(obj_dir) / f"{i:03d}-{s.stem}.ll"
            _run([clang, *flags, "-S", "-emit-llvm", str(s), "-o", str(ll)], f"compiling {s.name}")
            _without_asm(ll, s)
            return str(ll)

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            objs = list(pool.map(compile_one, enumerate(sources)))
        with cache.publishing(out, ".bc") as tmp:  # never leave a half-written library behind
            _run([link, *objs, "-o", str(tmp)], "linking libkernels")


def _without_asm(ll: Path, source: Path) -> None:
    """Inline asm (CMSIS-NN's DSP instructions) -> LLVM intrinsics, in place; any asm left would
    abort llvmlite's LLVM when it emits code, so it is refused here, naming the function."""
    out = inline_asm.rewrite(ll.read_text())
    left = inline_asm.leftover(out.text)
    if left:
        raise UserError(f"libjit: {source}: function '{left[0].function}' uses inline assembly "
                        f"'{left[0].template}' that specializer/library/inline_asm.py cannot turn into LLVM "
                        f"intrinsics (llvmlite's LLVM has no ARM assembler); build that file without it")
    if out.count:
        ll.write_text(out.text)


def _run(cmd: list[str], what: str) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines() or ["(no output)"]
        first = next((ln for ln in lines if "error" in ln), lines[0])
        raise UserError(f"libjit: {what} failed: {first}")


# Symbols only the kernel library can provide (everything else undefined comes from libc/libm).
LIBRARY_PREFIXES = ("libjit_", "xla.", "arm_")


def check_symbols(mod) -> None:
    """After linking with the libjit bitcode: a kernel the model calls but the library lacks is a
    link error naming the symbol (not a late 'undefined reference' from the final link)."""
    for f in mod.functions:
        if f.is_declaration and f.name.startswith(LIBRARY_PREFIXES) and not f.name.startswith("llvm."):
            raise UserError(f"link error: undefined symbol '{f.name}': the libjit bitcode does not define it")
