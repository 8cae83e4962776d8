"""A module as text made for reading and diffing (`*.diff.ll` next to every `*.ll` a build writes).

LLVM's printed IR is noisy to diff between variants or builds: function order follows the
module, unnamed values are numbered `%0 %1 ...` through the whole function, attribute groups
and metadata are numbered `#N` / `!N` module-wide, and a weight array is one line of
megabytes. This text is the same module with

* globals, then functions (declarations and definitions), each in name order;
* unnamed values named per function: arguments `%arg<i>`, blocks `%bb<i>`, instructions
  `%<op>.<n>` counted per opcode (a call: per callee, `%expf.2`), so an instruction added to
  one function renames nothing in another, and only later values of its own kind in its own;
* attribute groups written out where they are used (`define ... nounwind "target-cpu"=...`);
* metadata named by content (`!m.<hash>`, distinct nodes `!d.<hash>`: loop IDs of equal
  properties print as one), listed at the end in name order;
* initializers of globals over SUMMARY_BYTES replaced by `...` and a comment with type, shape,
  bytes and a hash of the initializer's text;
* the `; ModuleID` and `source_filename` lines dropped (they name the file, not the code);
* a comment above a function saying what it is, when the caller knows (a specialized clone:
  the constants it was made for).

It is for people and for `specialize diff-ir`, not for LLVM: it does not parse back.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import llvmlite.binding as llvm

from specializer.llvm import irtext, module
from specializer.llvm.irtext import ATTRIBUTE_REF, METADATA_REF, outside_strings
from specializer.optimize.speclog import CLONE_SUFFIX

SUMMARY_BYTES = 256  # a global initializer larger than this is summarized, not printed
HEADER = ("; diff-oriented text (specializer/optimize/difftext.py): for reading and diffing, not for parsing back.\n"
          "; Name order; %arg<i> %bb<i> %<op>.<n> for unnamed values; attribute groups inlined;\n"
          f"; metadata named by content (!m.<hash>, distinct !d.<hash>); initializers over {SUMMARY_BYTES} "
          "bytes summarized.\n")

_SHORT_OPS = {"getelementptr": "gep"}


@dataclass(frozen=True)
class Entity:
    """One named piece of the module: a global, a function, a named type, or the metadata."""
    kind: str  # "type" | "global" | "function" | "metadata"
    name: str  # as written: "@f", "%struct.T", "metadata"
    text: str  # its lines, each ending in a newline

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.name


@dataclass(frozen=True)
class DiffText:
    header: str  # target lines (triple, datalayout), module asm, comdats
    entities: tuple[Entity, ...]  # types, globals, functions (each in name order), then metadata

    def text(self) -> str:
        out, last = [HEADER, self.header], None
        for e in self.entities:
            if e.kind != last or e.kind in ("function", "metadata"):
                out.append("\n")  # a blank line before each function and between kinds
            out.append(e.text)
            last = e.kind
        return "".join(out)


def _hash(text: str, digits: int = 8) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:digits]


# --------------------------------------------------------------------------- local names


def _stem(inst: llvm.ValueRef) -> str:
    op = inst.opcode
    if op in ("call", "invoke", "callbr"):
        target = list(inst.operands)[-1]
        if target.value_kind == llvm.ValueKind.function and target.name:
            name = target.name
            if name.startswith("llvm."):  # llvm.fmuladd.f32 -> fmuladd
                name = name.split(".")[1]
            return re.sub(CLONE_SUFFIX, "", name)
    return _SHORT_OPS.get(op, op)


def name_locals(mod: llvm.ModuleRef) -> None:
    """Give every unnamed argument, block and value-producing instruction a name (see the
    module docstring); names a function already has are kept and never reused."""
    for g in mod.global_variables:
        if not g.name:  # @0, @1: numbered module-wide; named by content instead
            g.name = "anon." + _hash(str(g).split("=", 1)[1])
    for fn in mod.functions:
        if fn.is_declaration:
            continue
        args = list(fn.arguments)
        blocks = list(fn.blocks)
        insts = [i for b in blocks for i in b.instructions]
        taken = {v.name for v in (*args, *blocks, *insts) if v.name}
        counts: dict[str, int] = {}

        def fresh(stem: str) -> str:
            while True:
                counts[stem] = counts.get(stem, 0) + 1
                name = f"{stem}.{counts[stem]}"
                if name not in taken:
                    taken.add(name)
                    return name

        for i, a in enumerate(args):
            if not a.name:
                name = f"arg{i}"
                a.name = name if name not in taken else fresh(name)
                taken.add(a.name)
        for i, b in enumerate(blocks):
            if not b.name:
                name = f"bb{i}"
                b.name = name if name not in taken else fresh(name)
                taken.add(b.name)
        for inst in insts:
            if not inst.name and inst.type.type_kind != llvm.TypeKind.void:
                inst.name = fresh(_stem(inst))


# --------------------------------------------------------------------------- big initializers


def _summarize(line: str, ty: str, nbytes: int) -> str:
    """The global's line with its initializer replaced by `...` and described in a comment."""
    at = -1
    for kw in (" constant ", " global "):
        at = line.find(f"{kw}{ty} ")
        if at >= 0:
            at += len(kw) + len(ty) + 1
            break
    if at < 0 or nbytes <= SUMMARY_BYTES:
        return line
    end = irtext.initializer_end(line, at)
    init = line[at:end]
    if init in ("zeroinitializer", "undef", "poison") or not init:
        return line
    dims, elem = irtext.array_dims(ty)
    shape = f"{elem}[{'x'.join(dims)}]" if dims else ty
    return (f"{line[:at]}...{line[end:]}  ; initializer summarized: {shape}, {nbytes} bytes, "
            f"sha256 {_hash(init, 16)} of its text")


# --------------------------------------------------------------------------- metadata


def _metadata_names(nodes: dict[str, str]) -> dict[str, str]:
    """Number -> `m.<hash>` from each node's content with the nodes it refers to replaced by
    their own content hashes (a node's reference to itself, as in loop IDs, as `!self`).
    Distinct nodes are `d.<hash>`; those of equal content (loop IDs: one per loop, the same
    properties) print as one, since which loops share an ID is nothing a reader diffs, and a
    loop added to one function then renames none in another."""
    memo: dict[str, str] = {}

    def content(n: str, stack: tuple) -> str:
        if n in memo:
            return memo[n]
        if n not in nodes:
            return "!" + n

        def ref(m: re.Match) -> str:
            r = m.group(1)
            if r == n:
                return "!self"
            if r in stack:
                return "!cycle"
            return "!" + _hash(content(r, stack + (n,)))

        memo[n] = outside_strings(nodes[n], METADATA_REF, ref)
        return memo[n]

    return {n: ("d." if nodes[n].startswith("distinct ") else "m.") + _hash(content(n, ())) for n in nodes}


# --------------------------------------------------------------------------- the text


def render(text: str, where: str = "module.ll", notes: dict[str, list[str]] | None = None) -> DiffText:
    """The diff-oriented text of the module `text`. notes: function name -> comment lines
    (without '; ') put above its definition."""
    return render_module(module.parse(text, where), notes)


def render_module(mod: llvm.ModuleRef, notes: dict[str, list[str]] | None = None) -> DiffText:
    """`render` of a parsed module (which gets its unnamed values named on the way)."""
    name_locals(mod)
    td = llvm.create_target_data(mod.data_layout)
    sizes = {g.name: (str(g.global_value_type), td.get_abi_size(g.global_value_type))
             for g in mod.global_variables if not g.is_declaration}
    printed = str(mod)

    header, attrs, nodes, named = [], {}, {}, []
    raw: list[Entity] = []
    for kind, lines in irtext.pieces(printed):
        first = lines[0]
        if kind == "header":
            header.append(first)
        elif kind == "attributes":
            number, group = irtext.attribute_group(first)
            attrs[str(number)] = group
        elif kind == "metadata":
            node = irtext.metadata_node(first)
            if node:
                nodes[node[0]] = node[1]
            else:
                named.append(first)
        elif kind == "type":
            raw.append(Entity("type", first.split(" = ", 1)[0], first))
        elif kind == "global":
            name = irtext.global_name(first)
            line = _summarize(first, *sizes[name]) if name in sizes else first
            raw.append(Entity("global", "@" + name, line))
        else:
            name = irtext.define_name(first) if kind == "define" else irtext.declare_name(first)
            raw.append(Entity("function", "@" + name, "\n".join(lines)))
    order = {"type": 0, "global": 1, "function": 2}
    raw.sort(key=lambda e: (order[e.kind], e.name))

    def inline_attrs(m: re.Match) -> str:
        return " " + attrs.get(m.group(1), "#" + m.group(1))

    md = _metadata_names(nodes)

    def md_ref(m: re.Match) -> str:
        return "!" + md.get(m.group(1), m.group(1))

    def clean(line: str) -> str:
        return outside_strings(outside_strings(line, ATTRIBUTE_REF, inline_attrs), METADATA_REF, md_ref)

    entities = []
    for e in raw:
        lines = [clean(ln) for ln in e.text.split("\n")]
        if e.kind == "function" and notes and e.name[1:] in notes:
            lines = [f"; {n}" for n in notes[e.name[1:]]] + lines
        entities.append(Entity(e.kind, e.name, "\n".join(lines) + "\n"))
    if nodes or named:
        md_lines = sorted({f"!{md[n]} = {outside_strings(body, METADATA_REF, md_ref)}" for n, body in nodes.items()})
        named_lines = sorted(clean(ln) for ln in named)
        entities.append(Entity("metadata", "metadata", "\n".join(named_lines + md_lines) + "\n"))
    return DiffText("\n".join(header) + "\n" if header else "", tuple(entities))


def clone_notes(sites) -> dict[str, list[str]]:
    """Comment lines for each clone a specialization made (specialize.Site, or the dicts of
    specialization.json): the function it specializes and every constant it fixes there. A
    clone's clone (a later round's clone of a clone) is shown as what it is, the original
    function with the constants of every round at the original's argument positions (what its
    name is a hash of: specialize.clone_name)."""
    notes: dict[str, list[str]] = {}
    origin: dict[str, tuple[str, dict, tuple]] = {}  # clone -> (original, {position: summary}, own parameters)
    for s in sites:
        s = s if isinstance(s, dict) else asdict(s)
        clone = s.get("clone")
        if not clone or clone in notes or s.get("status") == "refused":
            continue
        root, fixed, kept = origin.get(s["callee"], (s["callee"], {}, tuple(range(s["nargs"]))))
        fixed = dict(fixed)
        for a in s["const"]:
            # the caller's local name of a stack object is no part of what the clone is
            fixed[kept[a["index"]]] = re.sub(f"^stack object {irtext.LOCAL} ", "stack object ", a["summary"])
        here = {a["index"] for a in s["const"]}
        origin[clone] = (root, fixed, tuple(k for i, k in enumerate(kept) if i not in here))
        # not which clone it was cloned from: that depends on what earlier rounds found, the
        # clone (and its name) only on the constants
        notes[clone] = ([f"specialized clone of @{root} for the constants:"]
                        + [f"  arg {i} = {fixed[i]}" for i in sorted(fixed)])
    return notes


def write(path: Path, text: str, where: str = "", notes: dict[str, list[str]] | None = None) -> Path:
    """Write the diff-oriented text of the module `text` to `path`."""
    path = Path(path)
    path.write_text(render(text, where or path.name, notes).text())
    return path


def diff_path(ll: Path) -> Path:
    """optimized.ll -> optimized.diff.ll"""
    ll = Path(ll)
    return ll.with_name(ll.stem + ".diff.ll")
