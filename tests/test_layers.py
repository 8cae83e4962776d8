"""The package's stages depend only downward: a module imports from its own stage or from one
below it, never from one above, and no two modules import each other (even lazily, inside a
function). Read from the source's own import statements, so a new upward edge fails here.

    driver     cli, driver/                        (builds and measures; the commands)
    report     report/                             (formats what it is given)
    run        run/                                (firmware, QEMU, cycles, profiles)
    optimize   optimize/                           (the passes and the variants' pipelines)
    capture    capture/, inputs, importers/        (JAX -> model.ll; reading a model)
    quant      quant/                              (int8 blocks written in JAX)
    library    library/                            (libjit bitcode, CMSIS-NN)
    base       llvm/, target, errors, files, tools, shipped
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "specializer"

LAYERS = (
    ("driver", ("cli", "driver")),
    ("report", ("report",)),
    ("run", ("run",)),
    ("optimize", ("optimize",)),
    ("capture", ("capture", "inputs", "importers")),
    ("quant", ("quant",)),
    ("library", ("library",)),
    ("base", ("llvm", "target", "errors", "files", "tools", "timing", "parallel", "cache", "shipped", "__init__")),
)

# Upward edges a redesign has yet to remove would be named here; none may be added.
KNOWN_UPWARD: set[tuple[str, str]] = set()


def modules() -> dict[str, Path]:
    return {".".join(f.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): f
            for f in PACKAGE.rglob("*.py")}


def imports(mods: dict[str, Path]) -> set[tuple[str, str]]:
    """(importer, imported) for every import of a package module, at any depth of the file."""
    edges = set()
    for name, f in mods.items():
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != name and t != "specializer":
                    edges.add((name, t))
    return edges


def layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    for i, (_, members) in enumerate(LAYERS):
        if top in members:
            return i
    raise AssertionError(f"{module} is in no layer: add its stage to LAYERS in {Path(__file__).name}")


def upward(edges) -> set[tuple[str, str]]:
    return {(a, b) for a, b in edges if layer(b) < layer(a)}


def cycles(edges) -> list[tuple[str, str]]:
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)

    def reaches(a: str, b: str) -> bool:
        todo, seen = [a], {a}
        while todo:
            for n in graph.get(todo.pop(), ()):
                if n == b:
                    return True
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return False

    return sorted({tuple(sorted((a, b))) for a, b in edges if reaches(b, a)})


def test_every_module_is_in_a_layer():
    for m in modules():
        layer(m)


def test_no_stage_imports_a_stage_above_it():
    found = upward(imports(modules()))
    new = sorted(found - KNOWN_UPWARD)
    assert not new, "imports from a higher stage (move the code down, or the caller up): " + ", ".join(
        f"{a} -> {b}" for a, b in new)
    gone = sorted(KNOWN_UPWARD - found)
    assert not gone, f"no longer imported, drop from KNOWN_UPWARD: {gone}"


def test_no_import_cycle():
    assert cycles(imports(modules())) == []


@pytest.mark.parametrize("edge, fails", [
    (("specializer.llvm.module", "specializer.optimize.pipeline"), "upward"),
    (("specializer.optimize.pipeline", "specializer.optimize.variants"), "cycle"),
])
def test_the_checks_see_what_they_guard(edge, fails):
    """An edge of each kind the tests above refuse is found by them."""
    edges = imports(modules()) | {edge}
    if fails == "upward":
        assert edge in upward(edges)
    else:
        assert cycles(edges)
