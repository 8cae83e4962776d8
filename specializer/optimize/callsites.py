"""Call numbers: every call the model makes gets a number that survives the pipeline.

Before anything rewrites it, each `call` of a function (not an intrinsic) in the model's own
functions is tagged `!specializer.call !{i32 N}`, N counting from 1 in module order. The tag rides
along on the call instruction through relayout, linking, specialization (which rewrites the callee
but keeps the call's metadata), IPSCCP and O2, until the call is inlined away. So a build's
optimized.ll says which function each of the model's calls ended up calling, in every variant, and
an option can name a call (`specialize{shape-only=3+7}`) the same way in every build.

Numbering is idempotent: a module already tagged (the all-args build numbers the model in
`relayout`, before `link` would) is returned unchanged, so both see the same numbers.
"""

from __future__ import annotations

from specializer.llvm import irtext
from specializer.llvm.passes import option

KIND = "specializer.call"
_TAG = irtext.attachment_pattern(KIND)


def _called(line: str) -> str | None:
    """The function (not an llvm.* intrinsic) a call line of a function body calls by name."""
    name = irtext.callee(line)
    return None if name is None or name.startswith("llvm.") else name


def number(text: str) -> str:
    """`text` with each call of a function in its defined functions tagged with its number."""
    if _TAG.search(text):
        return text
    lines = text.split("\n")
    next_id = irtext.next_metadata_id(text)
    nodes, inside = [], False
    for i, line in enumerate(lines):
        if line.startswith("define "):
            inside = True
        elif line == "}":
            inside = False
        elif inside and _called(line):
            nodes.append(f"!{next_id + len(nodes)} = !{{i32 {len(nodes) + 1}}}")
            lines[i] = irtext.attach(line, KIND, next_id + len(nodes) - 1)
    if not nodes:
        return text
    return "\n".join(lines).rstrip("\n") + "\n\n" + "\n".join(nodes) + "\n"


class Numbers:
    """Reads the call number of a call line of one module's text."""

    def __init__(self, text: str):
        self.of_node = {k: n for k, v in irtext.metadata_nodes(text).items()
                        if (n := irtext.metadata_int(v)) is not None}

    def of(self, line: str) -> int | None:
        m = _TAG.search(line)
        return self.of_node.get(int(m.group(1))) if m else None


def calls(text: str) -> list[tuple[str, str, int | None]]:
    """(caller, callee, call number or None) of every direct call of a function (not an
    intrinsic) in `text`'s defined functions, in module order."""
    numbers = Numbers(text)
    out, caller = [], None
    for line in text.split("\n"):
        if line.startswith("define "):
            caller = irtext.define_name(line)
        elif line == "}":
            caller = None
        elif caller is not None and (callee := _called(line)):
            out.append((caller, callee, numbers.of(line)))
    return out


def parse_set(text: str) -> frozenset:
    """`3+7+11` -> {3, 7, 11} (how an option names calls); ValueError when it is not that."""
    parts = text.split("+")
    if not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise ValueError(text)
    return frozenset(int(p) for p in parts)


def format_set(calls) -> str:
    return "+".join(str(n) for n in sorted(calls))


_SHAPE_ONLY_HELP = ("the model's calls (numbers as `call N` in the specialization log, joined by +) that all-args "
                    "{what}: where measurement found the shape-only clone faster")


def calls_option(what: str):
    """A pass option holding a set of call numbers (`shape-only`)."""
    return option(frozenset(), _SHAPE_ONLY_HELP.format(what=what), "calls", none="none")
