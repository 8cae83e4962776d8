"""Every operation on LLVM IR as text: names and their quoting, define lines, sections.

Most of the tool works on modules through LLVM; these are the places where text is the right
form (a model's text before it is linked, the diff-oriented output, artifacts people read).
"""

from __future__ import annotations

import re

# --------------------------------------------------------------------------- names in IR text

# A global's name as LLVM prints it after `@`: bare, or quoted with `\XX` escapes.
NAME = r'("(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+)'
_BARE_NAME = re.compile(r"^[-a-zA-Z$._][-a-zA-Z$._0-9]*$")
_DEFINE = re.compile(r"^define [^@]*@" + NAME + r"\(")


def quote(name: str) -> str:
    """`@name` as LLVM prints it (quoted when it has characters outside the bare set)."""
    if _BARE_NAME.match(name):
        return "@" + name
    return '@"' + name.replace("\\", "\\5C").replace('"', "\\22") + '"'


def unquote(ref: str) -> str:
    """A name as printed after `@` (`foo`, `"a b\\22"`) -> the name itself."""
    if ref.startswith('"'):
        return re.sub(r"\\([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), ref[1:-1])
    return ref


def define_name(line: str) -> str | None:
    """The function a `define` line defines (None for any other line)."""
    m = _DEFINE.match(line)
    return unquote(m.group(1)) if m else None


def defined(text: str) -> list[str]:
    """The functions `text` defines, in module order."""
    return [n for n in map(define_name, text.split("\n")) if n is not None]


# --------------------------------------------------------------------------- sections


_DEFINE_TAIL = re.compile(r"^((?: (?:local_)?unnamed_addr)?(?: addrspace\(\d+\))?(?: #\d+)?)")
_GLOBAL_TAIL = re.compile(r"(?:, align \d+)?(?:, ![-\w.]+ !\d+)*(?: #\d+)?$")
_GLOBAL_DEF = re.compile(r"^@" + NAME + r" = (?:[a-z_]+ )*(global|constant) ")


def with_sections(text: str, data: bool = True) -> str:
    """Each function (and with `data`, each global variable) in a section of its own (.text.<f>,
    .rodata.<g>, ...).

    llvmlite's TargetMachine has no -ffunction-sections switch, so the sections are named in
    the IR; GNU ld's --gc-sections then drops whatever the entry points do not reach."""
    out = []
    for line in text.split("\n"):
        if line.startswith("define ") and " section \"" not in line:
            name = define_name(line)
            at = _args_end(line, line.index(quote(name) + "(") + len(quote(name)))
            tail = _DEFINE_TAIL.match(line[at:]).end() + at
            line = line[:tail] + f' section ".text.{_plain(name)}"' + line[tail:]
        elif data:
            m = _GLOBAL_DEF.match(line)
            if m and ", section \"" not in line:
                name = m.group(1).strip('"')
                if m.group(2) == "constant":
                    kind = ".rodata"
                else:
                    kind = ".bss" if _zero_initialized(line, m.end()) else ".data"
                tail = _GLOBAL_TAIL.search(line).start()
                line = line[:tail] + f', section "{kind}.{_plain(name)}"' + line[tail:]
        out.append(line)
    return "\n".join(out)


def _zero_initialized(line: str, type_at: int) -> bool:
    if line[type_at] in "[{<":
        end = _args_end(line, type_at)
    else:
        end = line.index(" ", type_at)
    return line[end:].startswith(" zeroinitializer")


def _plain(name: str) -> str:
    return re.sub(r'[^-\w.$]', "_", name)


def _args_end(line: str, open_paren: int) -> int:
    depth = 0
    for i in range(open_paren, len(line)):
        if line[i] in "([{<":
            depth += 1
        elif line[i] in ")]}>":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(line)
