"""Rewrite syntax that XLA's newer LLVM prints but llvmlite's LLVM 22.1 rejects.

Purely textual and local: each rule rewrites one construct into its LLVM 22.1 spelling with
the same meaning. String constants (c"...") and comments are never touched.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from specializer.llvm.passes import TextPass

# Tokens are only rewritten outside c"..." strings and ; comments.
_STRING_OR_COMMENT = re.compile(r'c?"(?:[^"\\]|\\.)*"|;[^\n]*')

# `f0x406F9C68`: an IEEE bit pattern written at the value's own width (newer LLVM).
# LLVM 22.1 spells float and double constants as the 64-bit double pattern, half as 0xH.
_HEX_FLOAT = re.compile(r"(?<![\w.$@%])f0x([0-9A-Fa-f]+)\b")
# `+inf`, `-inf`, `+qnan`, `-qnan`, `+nan(0x...)`: special values spelled by name.
_NAMED_FLOAT = re.compile(r"(?<![\w.$@%])([+-])(inf|qnan|snan|nan\(0x[0-9A-Fa-f]+\))(?![\w.])")
# `8.000000e-03` as a float: newer LLVM prints the shortest decimal that rounds to the float;
# LLVM 22.1 accepts a decimal float only when it is exact, so such values become hex.
_DECIMAL_FLOAT = re.compile(r"(?<![\w.$@%#!])([-+]?\d+\.\d+e[-+]\d+)(?![\w.])")
# `target_mem: none` (and numbered forms) inside memory(...): unknown location kinds.
_TARGET_MEM = re.compile(r"(,\s*target_mem\w*:\s*\w+|target_mem\w*:\s*\w+\s*,\s*)")
# `denormal_fpenv(...)`: a newer function attribute; the default is what we want anyway.
_DENORMAL_FPENV = re.compile(r"\s*\bdenormal_fpenv\([^)]*\)")


def _hex_float(m: re.Match) -> str:
    digits = m.group(1)
    if len(digits) == 8:  # float: widen the bit pattern to the double that holds the same value
        (value,) = struct.unpack("<f", struct.pack("<I", int(digits, 16)))
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if len(digits) == 16:
        return "0x" + digits.upper()
    if len(digits) == 4:
        return "0xH" + digits.upper()
    raise ValueError(f"hex float literal of unexpected width: f0x{digits}")


def _named_float(m: re.Match) -> str:
    sign = 0x8000000000000000 if m.group(1) == "-" else 0
    kind = m.group(2)
    if kind == "inf":
        bits = 0x7FF0000000000000
    elif kind == "qnan":
        bits = 0x7FF8000000000000
    elif kind == "snan":
        bits = 0x7FF4000000000000
    else:  # nan(0xPAYLOAD): keep the payload in the double's mantissa
        bits = 0x7FF0000000000000 | (int(kind[4:-1], 16) & 0xFFFFFFFFFFFFF) or 0x7FF8000000000000
    return "0x%016X" % (sign | bits)


def _decimal_float(m: re.Match) -> str:
    value = float(m.group(1))
    (single,) = struct.unpack("<f", struct.pack("<f", value))
    if single == value:
        return m.group(1)  # exact: LLVM 22.1 takes it as written
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", single))[0]


def _decimal_floats(code: str) -> str:
    # Only lines without doubles: there an inexact decimal is legal and means a double.
    return "\n".join(line if "double" in line else _DECIMAL_FLOAT.sub(_decimal_float, line)
                     for line in code.split("\n"))


def _rewrite_code(code: str) -> str:
    code = _HEX_FLOAT.sub(_hex_float, code)
    code = _decimal_floats(code)
    code = _NAMED_FLOAT.sub(_named_float, code)
    code = _TARGET_MEM.sub("", code)
    code = _DENORMAL_FPENV.sub("", code)
    return code


def normalize(text: str) -> str:
    """Return `text` with every construct LLVM 22.1 rejects rewritten; other text is unchanged."""
    out, pos = [], 0
    for m in _STRING_OR_COMMENT.finditer(text):
        out.append(_rewrite_code(text[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_rewrite_code(text[pos:]))
    return "".join(out)


@dataclass(frozen=True)
class Normalize(TextPass):
    name = "normalize"
    summary = ("syntax XLA's newer LLVM prints and LLVM 22.1 rejects, respelled with the same meaning: "
               "f0x and named float constants, inexact decimal floats, target_mem, denormal_fpenv "
               "(capture/normalize.py; capture runs it on every XLA kernel module)")
    rewrite = staticmethod(normalize)
