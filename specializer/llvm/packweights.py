"""Float weights as byte strings while a build goes round the text many times.

A build prints and parses the whole module a dozen times (the specializing rounds above all).
A float model's weights are most of its text (mobilenet_vww: 5.4 of 5.8 MB), and LLVM prints and
reads `float 0x3FB5B0B3E0000000` lists 13 and 18 times slower than the same bytes as
`c"\\3F..."` (measured: 0.77 s against 0.06 s to print a 1 MB weight, 0.24 s against 0.013 s to
parse it). So from `link` on a build carries each float weight of the model as an `[4N x i8]`
string (`pack`), and every text a person reads gets its typed form back (`unpack`, as LLVM's
printer writes it): linked.ll, specialized.ll and optimized.ll keep `[N x float]`.

The bytes are the same, so is what LLVM makes of them: a load from a constant global folds to
the value at its offset whatever the global's element type (LLVM reinterprets the bytes), a GEP
names its own source type, and globals larger than 16 bytes get the same alignment (16 unless
given). Only globals of at least `MIN_BYTES` are packed, so small ones (ARM's constant-pool
promotion looks at globals of at most 64 bytes) are never touched; nor are weights whose bytes
LLVM would treat otherwise (all zero, read as a C string) or NumPy would change (a NaN).
"""

from __future__ import annotations

import codecs
import math
import re
from dataclasses import dataclass

import numpy as np

from specializer.llvm import irtext

MIN_BYTES = 256

_HEAD = re.compile(f"^@({irtext.NAME}) = ((?:[a-z_]+ )*)constant ")
_FLOAT_TYPE = re.compile(r"(?:\[\d+ x )+float\]+")
# a float element as LLVM reads it: the hex of its double (printed with 16 digits, written by hand
# with fewer), or any decimal (printed `1.500000e+00`, written `1.5` or `2.`)
_FLOAT = re.compile(r"float (0x[0-9A-Fa-f]{1,16}|[-+]?[0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?)")


@dataclass(frozen=True)
class Packed:
    text: str
    typed: dict  # global name -> (its array dimensions, the float32 bytes its packed string holds)


def _dims(ty: str) -> tuple[int, ...]:
    return tuple(int(d) for d in re.findall(r"\[(\d+) x ", ty))


def float_bytes(init: str, count: int) -> bytes | None:
    """The little-endian float32 bytes of a (nested) float array initializer, or None when it is
    not one plain list of `count` floats (a zeroinitializer inside, say)."""
    if "zeroinitializer" in init or "undef" in init or "poison" in init:
        return None
    tokens = _FLOAT.findall(init)
    if len(tokens) != count:
        return None
    doubles = np.frombuffer(bytes.fromhex("".join(t[2:].rjust(16, "0") if t.startswith("0x") else "0" * 16
                                                  for t in tokens)), ">f8").astype(np.float64)
    for i, t in enumerate(tokens):
        if not t.startswith("0x"):
            doubles[i] = float(t)
    if np.isnan(doubles).any():
        return None  # NumPy would quiet a signaling NaN: such weights stay typed
    singles = doubles.astype(np.float32)
    if not np.array_equal(singles.astype(np.float64), doubles):
        return None  # no float32 value (LLVM refuses such a float constant too)
    return singles.astype("<f4").tobytes()


def _float_texts(values: np.ndarray) -> list[str]:
    """Floats as LLVM's printer writes them: decimal when six significant digits say the value
    exactly (`1.500000e+00`), else the hex of its double (`0x3FB5B0B3E0000000`)."""
    doubles = values.astype(np.float64)
    h = doubles.astype(">f8").tobytes().hex().upper()
    out = ["0x" + h[i:i + 16] for i in range(0, len(h), 16)]
    # a value d * 10**k with d of at most six digits scales to a whole number below 10**6; the
    # others (nearly every weight) are left as hex without formatting them in decimal
    with np.errstate(all="ignore"):
        mag = np.abs(doubles)
        scaled = mag * 10.0 ** (5 - np.floor(np.log10(np.where(mag > 0, mag, 1.0))))
        maybe = np.isfinite(doubles) & ((mag == 0) | (np.abs(scaled - np.round(scaled)) < 1e-3))
    for i in np.flatnonzero(maybe).tolist():
        v = float(doubles[i])
        if float("%.5e" % v) == v:
            out[i] = "%.6e" % v
    return out


def _array_text(dims: tuple[int, ...], values: np.ndarray) -> str:
    """`[N x ...] INIT` as LLVM prints a constant array of these float32 values."""
    ty = "".join(f"[{d} x " for d in dims) + "float" + "]" * len(dims)
    return f"{ty} {_init_text(dims, values)}"


def _init_text(dims: tuple[int, ...], values: np.ndarray) -> str:
    if not values.view(np.uint32).any():
        return "zeroinitializer"
    if len(dims) == 1:
        return "[" + ", ".join("float " + t for t in _float_texts(values)) + "]"
    inner = values.reshape(dims[0], -1)
    return "[" + ", ".join(_array_text(dims[1:], row) for row in inner) + "]"


def _c_string(raw: bytes) -> str:
    hx = np.frombuffer(raw.hex().upper().encode(), np.uint8).reshape(-1, 2)
    out = np.empty((len(raw), 3), np.uint8)
    out[:, 0] = ord("\\")
    out[:, 1:] = hx
    return 'c"' + out.tobytes().decode() + '"'


def _c_bytes(body: str) -> bytes:
    # LLVM writes a byte as itself when printable, a backslash as \\, any other as \XX
    escaped = body.replace("\\\\", "\\5C").replace("\\", "\\x")
    return codecs.escape_decode(escaped.encode("latin-1"))[0]


def pack(text: str, names) -> Packed:
    """Each constant float array global of `names` (at least MIN_BYTES) as `[4N x i8] c"..."`."""
    names = set(names)
    lines = text.split("\n")
    typed = {}
    for i, line in enumerate(lines):
        if not line.startswith("@"):
            continue
        m = _HEAD.match(line[:400])
        if m is None or irtext.unquote(m.group(1)) not in names:
            continue
        t = _FLOAT_TYPE.match(line, m.end())
        if t is None or line[t.end():t.end() + 2] != " [":
            continue
        dims = _dims(t.group(0))
        if 4 * math.prod(dims) < MIN_BYTES:
            continue
        init_end = _array_end(line, t.end() + 1)
        raw = float_bytes(line[t.end() + 1:init_end], math.prod(dims))
        if raw is None or (raw[-1] == 0 and raw.count(0) == 1) or not any(raw):
            # kept typed: bytes that read as a C string (LLVM would place them in a mergeable
            # string section), and all zeros (LLVM would print the string as zeroinitializer)
            continue
        typed[irtext.unquote(m.group(1))] = (dims, raw)
        lines[i] = f"{line[:t.start()]}[{len(raw)} x i8] {_c_string(raw)}{line[init_end:]}"
    return Packed("\n".join(lines), typed)


def _array_end(line: str, start: int) -> int:
    """The index just past the `[...]` that opens at `start` (no strings inside a float list)."""
    depth = 0
    for m in re.compile(r"[\[\]]").finditer(line, start):
        depth += 1 if m.group(0) == "[" else -1
        if depth == 0:
            return m.end()
    raise ValueError("unbalanced array initializer")


def unpack(text: str, typed: dict) -> str:
    """`text` with every packed global given back its typed form, as LLVM would print it (a
    global optimized away stays away); the bytes must be what `pack` wrote."""
    if not typed:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("@"):
            continue
        m = _HEAD.match(line[:400])
        name = irtext.unquote(m.group(1)) if m else None
        if name not in typed:
            continue
        dims, raw = typed[name]
        head = f"[{len(raw)} x i8] c\""
        if not line.startswith(head, m.end()):
            raise ValueError(f"packed weight {irtext.quote(name)} changed type: {line[m.end():m.end() + 60]}")
        end = line.index('"', m.end() + len(head))
        if _c_bytes(line[m.end() + len(head):end]) != raw:
            raise ValueError(f"packed weight {irtext.quote(name)} changed its bytes")
        lines[i] = line[:m.end()] + _array_text(dims, np.frombuffer(raw, "<f4")) + line[end + 1:]
    return "\n".join(lines)
