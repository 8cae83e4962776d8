"""`specialize diff-ir A B`: what changed between two modules, function by function.

Both sides are rendered as diff-oriented text (difftext.py), so value numbering, attribute
groups, metadata numbers and function order do not show up as changes. Types, globals and
functions are paired by name: one line per added, removed or changed one, then a unified diff
of each changed one; identical ones print nothing. A side is a `.ll` file or a variant's build
directory (its `<stage>.ll`); a `specialization.json` next to the `.ll` labels the clones.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path

from specializer.llvm import module, read
from specializer.optimize import difftext

from specializer.errors import UserError

STAGES = ("linked", "specialized", "optimized")


@dataclass(frozen=True)
class Change:
    status: str  # added | removed | changed
    kind: str  # type | global | function | metadata
    name: str
    diff: str = ""  # unified diff of a changed entity


@dataclass(frozen=True)
class IrDiff:
    a: str
    b: str
    changes: tuple[Change, ...]
    identical: int  # entities the same on both sides

    def counts(self) -> dict:
        c = {"added": 0, "removed": 0, "changed": 0}
        for x in self.changes:
            c[x.status] += 1
        return c


def resolve(path: Path, stage: str = "optimized") -> Path:
    """The `.ll` a side names: the file itself, or `<stage>.ll` in a build directory."""
    path = Path(path)
    if path.is_dir():
        ll = path / f"{stage}.ll"
        if not ll.is_file():
            have = ", ".join(sorted(p.name for p in path.glob("*.ll") if not p.name.endswith(".diff.ll")))
            raise UserError(f"{path}: no {stage}.ll in this directory (have: {have or 'no .ll files'}); give a "
                            "variant's build directory (e.g. variants/all-args) or a .ll file")
        return ll
    if not path.exists():
        raise UserError(f"{path}: no such file or directory")
    if path.name.endswith(".diff.ll"):
        raise UserError(f"{path}: a diff-oriented text, which does not parse back; give the .ll it was made from "
                        f"({difftext_source(path).name})")
    return path


def difftext_source(path: Path) -> Path:
    return path.with_name(path.name[: -len(".diff.ll")] + ".ll")


def notes_for(ll: Path) -> dict:
    """Clone comments from the specialization.json next to `ll`, if any."""
    log = ll.with_name("specialization.json")
    if not log.is_file():
        return {}
    try:
        sites = json.loads(log.read_text())["sites"]
        return difftext.clone_notes(sites)
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{log}: not a specialization log (specialization.json as a build writes it)") from None


def load(path: Path, stage: str = "optimized") -> difftext.DiffText:
    ll = resolve(path, stage)
    text = read.read(ll)
    mod = module.parse_input(text, str(ll), scan=False)  # a parser crash is one line too
    return difftext.render_module(mod, notes_for(ll))


def compare_modules(a: difftext.DiffText, b: difftext.DiffText, a_name: str = "A", b_name: str = "B",
            context: int = 3) -> IrDiff:
    left = {e.key: e for e in a.entities}
    right = {e.key: e for e in b.entities}
    changes, same = [], 0
    if a.header != b.header:
        changes.append(Change("changed", "module", "header", _unified(a.header, b.header, "header", context)))
    for key in sorted(set(left) | set(right), key=_order):
        kind, name = key
        if key not in right:
            changes.append(Change("removed", kind, name))
        elif key not in left:
            changes.append(Change("added", kind, name))
        elif left[key].text != right[key].text:
            changes.append(Change("changed", kind, name, _unified(left[key].text, right[key].text, name, context)))
        else:
            same += 1
    return IrDiff(a_name, b_name, tuple(changes), same)


def _order(key: tuple[str, str]) -> tuple:
    return {"type": 0, "global": 1, "function": 2, "metadata": 3}.get(key[0], 4), key[1]


def _unified(a: str, b: str, name: str, context: int) -> str:
    lines = difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True),
                                 f"a/{name}", f"b/{name}", n=context)
    return "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines)


def render(d: IrDiff, names_only: bool = False) -> str:
    c = d.counts()
    out = [f"--- {d.a}\n+++ {d.b}\n",
           f"{c['changed']} changed, {c['added']} added, {c['removed']} removed, {d.identical} identical\n"]
    for x in d.changes:
        out.append(f"{x.status} {x.kind} {x.name}\n")
    if not names_only:
        for x in d.changes:
            if x.diff:
                out.append("\n" + x.diff)
    return "".join(out)
