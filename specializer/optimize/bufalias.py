"""all-args: a buffer address inside the arena becomes a symbol of its own.

After all-args specialization a kernel's clone addresses its buffers as constants such as
`getelementptr (i8, ptr @model_arena, i32 32000)`. LLVM folds the offset into every address it
derives from it, and on Thumb-2 an offset past the load's immediate range (4095 for LDR, 1020
for VLDR) costs an extra add or a register per access: measured on kws_dscnn, the three
depthwise clones that read `arena+32000` ran 6.5% more est. cycles than the one that reads
`arena+0`, and all-args lost to dims. An alias `@model_arena.at32000` is the same address as a
symbol the linker resolves, so the clone's addressing is that of a buffer at offset 0 (kws:
-0.9% est. cycles, below dims again).

Only offsets of 4096 bytes and more into mutable globals (the memory plan's buffers) are
rewritten; weights are globals of their own. Text in, text out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specializer.llvm import irtext
from specializer.llvm.irtext import quote
from specializer.llvm.passes import Pass
from specializer.optimize.state import BuildState

MIN_OFFSET = 4096  # below this, the offset fits an LDR/STR immediate
# what may come before `global` in the line of a buffer this pass aliases (not, say, `external`)
_BUFFER_KEYWORDS = {"internal", "private", "dso_local", "local_unnamed_addr", "unnamed_addr"}


def alias_name(base: str, offset: int) -> str:
    return f"{base}.at{offset}"


def rewrite(text: str) -> tuple[str, list[str]]:
    """`text` with large constant offsets into mutable globals written as aliases, and the
    aliases' names (sorted)."""
    mutable = set()
    for line in text.split("\n"):
        d = irtext.global_def(line) if line.startswith("@") else None
        if d and d.kind == "global" and set(d.keywords) <= _BUFFER_KEYWORDS:
            mutable.add(d.name)
    aliases: dict[str, str] = {}

    def sub(m: re.Match) -> str:
        base, offset = irtext.unquote(m.group("base")[1:]), int(m.group("offset"))
        if base not in mutable or offset < MIN_OFFSET:
            return m.group(0)
        name = alias_name(base, offset)
        aliases[name] = (f"{quote(name)} = internal alias i8, getelementptr (i8, ptr {quote(base)}, "
                         f"{m.group('index')} {offset})")
        return quote(name)

    out = irtext.CONST_GEP.sub(sub, text)
    if not aliases:
        return text, []
    return out.rstrip("\n") + "\n\n" + "\n".join(aliases[k] for k in sorted(aliases)) + "\n", sorted(aliases)


@dataclass(frozen=True)
class Bufalias(Pass):
    name = "bufalias"
    summary = "a constant address 4096 bytes or more into a buffer becomes an alias of its own (bufalias.py)"

    def run(self, state: BuildState) -> None:
        text, aliases = rewrite(state.as_text())
        state.set_text(text)
        state.aliases += tuple(aliases)
