"""The profile per kernel and HLO op (run/hloprofile.py's rows) as a table within WIDTH columns."""

from __future__ import annotations

import re
from pathlib import Path

from specializer.report.tables import WIDTH, github_table
from specializer.run.hloprofile import Row


def _short_op(op_name: str) -> str:
    """op_name without JAX's outer jit(...) scopes: jit(model)/dot_general -> dot_general."""
    parts = op_name.split("/")
    while len(parts) > 1 and re.fullmatch(r"jit\([^)]*\)", parts[0]):
        parts = parts[1:]
    return "/".join(parts)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 2, 1)] + ".."


NOTE = """\
HLO: the instruction a kernel or library call runs ('<- X': a library function called from X's
code; +N: more); op_name and source: XLA's metadata for it (JAX's op and the model's file:line);
est. cycles: TRM-weighted, per instruction by address (kernel code inlined into the entry counts
for its kernel); mca: llvm-mca's Cortex-M4 model on the same blocks (--mca); JSON: every field"""


def table(rs: list[Row]) -> str:
    """Rows within WIDTH columns: the longest text columns are cut (the JSON has them whole)."""
    total = sum(r.cycles for r in rs) or 1
    mca = any(r.mca_cycles is not None for r in rs)
    headers = ["kernel", "HLO", "op_name", "source", "insns", "est. cycles", "%"] + (["mca"] if mca else [])
    body = []
    for r in rs:
        hlo = r.hlo[0] + (f" +{len(r.hlo) - 1}" if len(r.hlo) > 1 else "") if r.hlo else "-"
        if r.kind == "library" and r.hlo:
            hlo = "<- " + hlo
        elif r.kind == "entry":
            hlo = "(entry)"
        source = Path(r.source.rsplit(":", 1)[0]).name + ":" + r.source.rsplit(":", 1)[1] if ":" in r.source else "-"
        body.append([r.kernel, hlo, _short_op(r.op_name) or "-", source, str(r.insns), str(r.cycles),
                     f"{100 * r.cycles / total:.1f}"] + ([str(r.mca_cycles)] if mca else []))
    floor = {0: 16, 1: 10, 2: 10, 3: 12}  # text columns: cut, the one most over its floor first, until it fits
    while True:
        widths = [max(len(h), *(len(b[c]) for b in body)) if body else len(h) for c, h in enumerate(headers)]
        if sum(widths) + 3 * len(headers) + 1 <= WIDTH:
            break
        c = max(floor, key=lambda k: (widths[k] - floor[k], -k))
        if widths[c] <= floor[c]:
            break
        for b in body:  # a source keeps its line number: cut from the left
            b[c] = _cut(b[c], widths[c] - 1) if c != 3 or len(b[c]) < widths[c] else ".." + b[c][-(widths[c] - 3):]
    align = ("left",) * 4 + ("right",) * (len(headers) - 4)
    return github_table(body, headers, align) + "\n"
