"""Reading a `.ll` file: bytes in, UTF-8 text out, or one line saying what the file is instead.

LLVM's own lexer works on bytes; Python must decode first, and a file that is not UTF-8 text
(bitcode, an ELF, UTF-16, binary) must not end in a UnicodeDecodeError traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

from specializer.errors import UserError

_BITCODE = b"BC\xc0\xde"
_BITCODE_WRAPPER = b"\xde\xc0\x17\x0b"  # 0x0B17C0DE little-endian: Darwin's bitcode wrapper
_ELF = b"\x7fELF"
_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
              (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))
# String literals and comments, in file order: a byte LLVM takes verbatim lives in one of them.
_STRING_OR_COMMENT = re.compile(rb'"[^"]*"|;[^\n]*')
# Control bytes no text file has (tab, newline, CR, FF and ESC are text).
_CONTROL = bytes(b for b in range(32) if b not in (9, 10, 12, 13, 27)) + b"\x7f"


def _line_col(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def _looks_utf16(head: bytes) -> bool:
    """ASCII text in UTF-16 without a byte-order mark: every other byte is NUL."""
    if len(head) < 8:
        return False
    even, odd = head[0::2], head[1::2]
    return even.count(0) > 0.4 * len(even) or odd.count(0) > 0.4 * len(odd)


def _escape_verbatim(data: bytes, err: UnicodeDecodeError, where: str) -> bytes:
    """Non-UTF-8 bytes inside a string literal or a comment become `\\XX` escapes, which LLVM
    reads as the same byte (in a comment they do not matter); anywhere else they are an error."""
    spans = [m.span() for m in _STRING_OR_COMMENT.finditer(data)]
    out, last, i = bytearray(), 0, 0
    bad = err.start
    while bad is not None:
        while i < len(spans) and spans[i][1] <= bad:
            i += 1
        if i == len(spans) or not spans[i][0] <= bad < spans[i][1]:
            line, col = _line_col(data, bad)
            raise UserError(f"{where}:{line}:{col}: error: byte 0x{data[bad]:02x} is not UTF-8 text "
                            "(LLVM IR is UTF-8; outside strings and comments only ASCII is valid)")
        out += data[last:bad] + f"\\{data[bad]:02X}".encode()
        last = bad + 1
        try:
            data[last:].decode("utf-8")
            bad = None
        except UnicodeDecodeError as e:
            bad = last + e.start
    return bytes(out + data[last:])


def decode(data: bytes, where: str) -> str:
    """The text of a `.ll` file's bytes (a UTF-8 byte-order mark is skipped)."""
    if data.startswith(_BITCODE) or data.startswith(_BITCODE_WRAPPER):
        raise UserError(f"{where}: LLVM bitcode, not text IR: disassemble it first (llvm-dis-19 {where})")
    if data.startswith(_ELF):
        raise UserError(f"{where}: an ELF binary (object or executable), not LLVM IR text")
    for bom, name in _WIDE_BOMS:
        if data.startswith(bom):
            raise UserError(f"{where}: {name} text (byte-order mark {bom.hex(' ')}); LLVM IR must be UTF-8: "
                            f"convert it (iconv -f {name} -t UTF-8)")
    if _looks_utf16(data[:512]):
        raise UserError(f"{where}: UTF-16 text (every other byte is NUL); LLVM IR must be UTF-8: "
                        "convert it (iconv -f UTF-16 -t UTF-8)")
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM):]
    head = data[:4096]
    if head and sum(head.count(bytes([c])) for c in _CONTROL) > 0.1 * len(head):
        raise UserError(f"{where}: binary data, not LLVM IR text")
    nul = data.find(b"\0")
    if nul >= 0:
        line, col = _line_col(data, nul)
        raise UserError(f"{where}:{line}:{col}: error: NUL byte at offset {nul}; LLVM IR text has none")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        return _escape_verbatim(data, e, where).decode("utf-8")


def read(path: Path) -> str:
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: a directory, not a .ll file") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    return decode(data, str(path))


# the first line that is neither blank, a comment, nor a header (found early in any real module)
_CONTENT = re.compile(r'^[ \t\r\f]*(?!;|source_filename\s*=|target\s+(?:triple|datalayout)\s*=)\S', re.M)


def check_not_empty(text: str, where: str) -> None:
    """An empty or comments-only module: say so before anything blames its triple."""
    if not _CONTENT.search(text):
        raise UserError(f"{where}: empty module: no definitions, only comments or whitespace")


def check_defines(mod, where: str) -> None:
    """A parsed module that only declares: nothing to build."""
    if all(f.is_declaration for f in mod.functions) and all(g.is_declaration for g in mod.global_variables):
        raise UserError(f"{where}: the module defines nothing (only declarations): nothing to build")
