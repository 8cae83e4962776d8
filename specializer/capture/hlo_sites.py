"""hlo.json: which HLO instruction each call of the entry runs, with XLA's metadata for it.

Capture writes it next to model.ll: per call the entry makes (in the order of its text), the
callee and the HLO instruction; per instruction its opcode, shape, `op_name` and the source
line JAX recorded (`metadata={op_name=... stack_frame_id=N}`, resolved through the module's
StackFrames / FileLocations / FileNames tables to the innermost frame), and for a fusion the
instructions fused into it. The profile (hloprofile.py) names its rows with these.

XLA drops the metadata of some instructions it creates while optimizing (a dot rewritten by
its layout passes, a reduce-window it splits a long reduction into, a copy of loop state):
such an instruction borrows the metadata of the one instruction of the same opcode and shape
in the HLO before optimizations, else of its nearest user, else operand, that has some (a
reduce-window feeding reduce_max is part of reduce_max), and says which (`borrowed`).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from specializer.errors import UserError
from specializer.capture.xla_dump import Dump, Instruction, parse_hlo

SCHEMA = 1
FILE_NAME = "hlo.json"
# instructions inside a fusion that compute nothing a person wrote
_PLUMBING = {"parameter", "constant", "broadcast", "bitcast", "reshape", "get-tuple-element", "tuple"}


@dataclass(frozen=True)
class HloOp:
    name: str
    opcode: str
    shape: str
    op_name: str = ""  # JAX's name for the op, e.g. jit(model)/dot_general
    source: str = ""  # file:line of the innermost frame JAX recorded
    borrowed: str = ""  # the pre-optimization instruction whose metadata this one took
    fused: tuple["HloOp", ...] = ()  # a fusion: its computing instructions, in order


@dataclass(frozen=True)
class HloMap:
    calls: tuple[tuple[str, str], ...]  # (callee, HLO instruction name) per call of the entry
    ops: dict = field(default_factory=dict)  # name -> HloOp

    def dumps(self) -> str:
        return json.dumps({"schema": SCHEMA, "calls": [list(c) for c in self.calls],
                           "ops": {k: asdict(v) for k, v in sorted(self.ops.items())}}, indent=1) + "\n"


def _op(d: dict) -> HloOp:
    return HloOp(**{**d, "fused": tuple(_op(f) for f in d.get("fused", ()))})


def load(path: Path) -> HloMap | None:
    """hlo.json, or None when the model was captured without one."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
        return HloMap(tuple((c, h) for c, h in raw["calls"]), {k: _op(v) for k, v in raw["ops"].items()})
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"{path}: not a specializer hlo.json ({e}); capture the model again") from None


_TABLE = re.compile(r"^(FileNames|FunctionNames|FileLocations|StackFrames)$")


def frames(text: str, prefer: str | None = None) -> dict[int, str]:
    """stack_frame_id -> 'file:line', from an HLO module's header tables: the innermost frame, or
    with `prefer` (the model's file) the innermost frame in that file when the stack has one (an
    op a helper library made, such as an int8 block, is then named by the model's line).

    The dump prints a frame's parent one above its id (a frame without a parent shows 1): the
    chain of a stack k -> k' runs through parent_frame_id - 1, down to 0."""
    tables: dict[str, dict[int, str]] = {}
    current = None
    for line in text.splitlines():
        if _TABLE.match(line):
            current = tables.setdefault(line, {})
        elif not line.strip() or line.startswith(("%", "ENTRY", "HloModule")):
            current = None
        elif current is not None:
            key, _, rest = line.partition(" ")
            if key.isdigit():
                current[int(key)] = rest
    names = {k: v.strip('"') for k, v in tables.get("FileNames", {}).items()}
    stack = tables.get("StackFrames", {})

    def place(k: int) -> str | None:
        loc = re.search(r"file_location_id=(\d+)", stack.get(k, ""))
        where = tables.get("FileLocations", {}).get(int(loc.group(1))) if loc else None
        file_id = re.search(r"file_name_id=(\d+)", where or "")
        line_no = re.search(r"\bline=(\d+)", where or "")
        if file_id and line_no and int(file_id.group(1)) in names:
            return f"{names[int(file_id.group(1))]}:{line_no.group(1)}"
        return None

    out = {}
    for k in stack:
        inner = place(k)
        if inner is None:
            continue
        out[k] = inner
        if prefer is None:
            continue
        seen, j = set(), k
        while j in stack and j not in seen:
            seen.add(j)
            here = place(j)
            if here is not None and here.rsplit(":", 1)[0] == prefer:
                out[k] = here
                break
            parent = re.search(r"parent_frame_id=(\d+)", stack[j])
            j = int(parent.group(1)) - 1 if parent else 0
    return out


def metadata(ins: Instruction, frame_of: dict[int, str]) -> tuple[str, str]:
    """(op_name, 'file:line') of one instruction; empty strings where XLA recorded none."""
    m = re.search(r"metadata=\{(.*)", ins.attrs)
    if not m:
        return "", ""
    meta = m.group(1)
    name = re.search(r'op_name="((?:[^"\\]|\\.)*)"', meta)
    frame = re.search(r"stack_frame_id=(\d+)", meta)
    src_file = re.search(r'source_file="((?:[^"\\]|\\.)*)"', meta)
    src_line = re.search(r"source_line=(\d+)", meta)
    source = frame_of.get(int(frame.group(1)), "") if frame else ""
    if not source and src_file and src_line:
        source = f"{src_file.group(1)}:{src_line.group(1)}"
    return (name.group(1) if name else ""), source


def _plain_shape(shape: str) -> str:
    return re.sub(r"\{[^}]*\}", "", shape)  # without the layout


class _Reader:
    def __init__(self, text: str, before: str | None, source: str | None):
        self.comps = parse_hlo(text)
        self.frame_of = frames(text, source)
        self.before: list[tuple[Instruction, dict]] = []
        if before:
            bf = frames(before, source)
            self.before = [(i, bf) for c in parse_hlo(before).values() for i in c.instructions]
        self.instrs = {i.name: i for c in self.comps.values() for i in c.instructions}
        self.users: dict[str, list[str]] = {}
        for c in self.comps.values():
            for i in c.instructions:
                for o in i.operands:
                    self.users.setdefault(o, []).append(i.name)

    def _neighbour(self, ins: Instruction) -> tuple[str, str, str]:
        """(op_name, source, name) of the nearest user, else operand, with metadata (3 steps at most)."""
        for step in (lambda n: self.users.get(n, []), lambda n: list(self.instrs[n].operands) if n in self.instrs else []):
            seen, frontier = {ins.name}, [ins.name]
            for _ in range(3):
                frontier = [m for n in frontier for m in step(n) if m not in seen and m in self.instrs]
                seen.update(frontier)
                for m in frontier:
                    o = self.op(self.instrs[m], search=False)
                    # a fusion it feeds: the first op fused in (a reduction's input goes to the reduction)
                    o = next((f for f in o.fused if f.op_name), o) if step is not None and o.fused else o
                    if o.op_name:
                        return o.op_name, o.source, m
        return "", "", ""

    def op(self, ins: Instruction, fused: bool = True, search: bool = True) -> HloOp:
        op_name, source = metadata(ins, self.frame_of)
        borrowed = ""
        if not op_name and ins.opcode not in _PLUMBING:
            same = [(i, f) for i, f in self.before
                    if i.opcode == ins.opcode and _plain_shape(i.shape) == _plain_shape(ins.shape)
                    and metadata(i, f)[0]]
            if len(same) == 1:
                op_name, source = metadata(*same[0])
                borrowed = same[0][0].name
        inner: tuple[HloOp, ...] = ()
        body = self.comps.get(ins.attr("calls") or "") if fused and ins.opcode == "fusion" else None
        if body is not None:
            inner = tuple(self.op(i, fused=False) for i in body.instructions if i.opcode not in _PLUMBING)
        if not op_name and inner:  # a fusion without metadata: its fused instructions have it
            first = next((f for f in inner if f.op_name), None)
            if first is not None:
                op_name, source = first.op_name, first.source
        if not op_name and search and fused:
            op_name, source, borrowed = self._neighbour(ins)
        return HloOp(ins.name, ins.opcode, ins.shape, op_name, source, borrowed, inner)


def build(dump: Dump, calls: list[tuple[str, str]], source: Path | None = None) -> HloMap:
    """The map for one captured module: `calls` from entry.generate, metadata from the dump;
    `source`: the model's file, whose lines name an op when its stack passes through it."""
    text = (dump.directory / f"{dump.prefix}.cpu_after_optimizations.txt").read_text()
    before_path = dump.directory / f"{dump.prefix}.before_optimizations.txt"
    reader = _Reader(text, before_path.read_text() if before_path.is_file() else None,
                     str(source) if source else None)
    ops = {}
    for _, name in calls:
        ins = reader.instrs.get(name)
        if ins is not None and name not in ops:
            ops[name] = reader.op(ins)
    return HloMap(tuple(calls), ops)
