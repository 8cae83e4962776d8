"""Build (and cache) the libjit kernel library: libkernels/*.c -> one thumbv7em bitcode file."""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError
from .retarget import CPU, TRIPLE
from .tools import build_dir, find_tool, repo_root

# Optimizations on (clang -O0 would mark every function optnone, which blocks specialization).
CFLAGS = [
    f"--target={TRIPLE}", f"-mcpu={CPU}", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-mthumb",
    "-O2", "-fomit-frame-pointer", "-fno-builtin-printf", "-fno-common", "-ffunction-sections",
    "-fdata-sections", "-ffp-contract=off",
]


@dataclass(frozen=True)
class Library:
    bitcode: Path
    sources: tuple[Path, ...]


def _newlib_include() -> list[str]:
    # clang needs newlib's headers (math.h, string.h) for the bare-metal target.
    gcc = find_tool("arm-none-eabi-gcc")
    out = subprocess.run([gcc, "-print-sysroot"], capture_output=True, text=True).stdout.strip()
    inc = Path(out or "/usr/lib/arm-none-eabi") / "include"
    if not inc.is_dir():
        raise UserError("newlib headers not found: install them with 'apt-get install libnewlib-arm-none-eabi'")
    return ["-isystem", str(inc)]


def build(src_dir: Path | None = None) -> Library:
    """Compile every .c under libkernels/ to bitcode and link them; rebuild when a source changes."""
    src_dir = src_dir or repo_root() / "libkernels"
    sources = tuple(sorted(src_dir.glob("*.c")))
    clang = find_tool("clang-19")
    link = find_tool("llvm-link-19")
    flags = CFLAGS + _newlib_include()
    key = hashlib.sha256()
    for s in sources:
        key.update(s.name.encode() + b"\0" + s.read_bytes())
    key.update(" ".join(flags).encode())
    out_dir = build_dir() / "libjit"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"libkernels-{key.hexdigest()[:16]}.bc"
    if out.exists():
        return Library(out, sources)
    objs = []
    for s in sources:
        bc = out_dir / (s.stem + ".bc")
        _run([clang, *flags, "-c", "-emit-llvm", str(s), "-o", str(bc)], f"compiling {s.name}")
        objs.append(str(bc))
    tmp = out.with_suffix(".tmp")
    _run([link, *objs, "-o", str(tmp)], "linking libkernels")
    os.replace(tmp, out)  # never leave a half-written library behind
    return Library(out, sources)


def _run(cmd: list[str], what: str) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        first = (r.stderr.strip().splitlines() or ["(no output)"])[0]
        raise UserError(f"libjit: {what} failed: {first}")
