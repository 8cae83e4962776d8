"""What a pass is: a named step over a module, its options the fields of a frozen dataclass.

The pattern of xDSL's passes and LLVM's `-passes=`: each step of a build is a subclass of
`Pass` that lives in the module implementing it (capture's rewrites, the specializer, LLVM's own
pipelines in transforms.py); `specializer/optimize/pipeline.py` is the one registry, parser and
printer of pipeline text. A pass acts on a `ModuleState`, the IR as text or as a parsed module,
each converted on demand, so text rewrites and LLVM pipelines can follow one another.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar

import llvmlite.binding as llvm

from specializer.llvm import module, options

# The three stages of a build's pipeline, in order (pipeline.check): passes on the model's text
# before it is linked; `link`; passes on the linked module.
MODEL, LINK, MODULE = "model", "link", "module"


def option(default, help: str, kind: str, none: str | None = None, choices: tuple = (), minimum=None):
    """A pass option: `kind` is int, float, bool, choice or calls (a set of the model's call numbers,
    `3+7+11`; callsites.py); `none` how None (for calls: the empty set) is written."""
    return field(default=default, metadata=dict(help=help, kind=kind, none=none, choices=choices, minimum=minimum))


@dataclass
class ModuleState:
    """The IR a pipeline carries: text or module, each converted on demand."""
    name: str  # the module's ID (`; ModuleID = '...'` when printed)
    where: str  # how errors name the input
    text: str | None = None
    module: llvm.ModuleRef | None = None
    # text a user gave, read as written (opt): its first parse is guarded as every input's is
    # (module.parse_input: what would kill LLVM is named, the trial parse runs in a child)
    untrusted: bool = False

    def as_text(self) -> str:
        if self.text is None:
            self.text, self.module = str(self.module), None
        return self.text

    def as_module(self) -> llvm.ModuleRef:
        if self.module is None:
            parse = module.parse_input if self.untrusted else module.parse
            self.module, self.untrusted = parse(self.text, self.where), False
            self.module.name = self.name
            self.text = None
        return self.module

    def set_text(self, text: str) -> None:
        self.text, self.module = text, None

    def set_module(self, mod: llvm.ModuleRef) -> None:
        self.text, self.module, self.untrusted = None, mod, False


@dataclass(frozen=True)
class Pass:
    """One step: `name` in the text, its `stage`, a `summary` for help; the dataclass fields of a
    subclass are its options."""
    name: ClassVar[str]
    stage: ClassVar[str] = MODULE
    summary: ClassVar[str]

    def run(self, state: ModuleState) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class TextPass(Pass):
    """A pass that is a function of the module's text: `rewrite = staticmethod(f)`, f(text) -> text
    (reading's rewrites: normalize, retarget, fminmax)."""
    rewrite: ClassVar

    def run(self, state: ModuleState) -> None:
        state.set_text(self.rewrite(state.as_text()))


THRESHOLD_HELP = "LLVM's loop-unroll threshold (llvm: LLVM's own, 150 at O2)"


@contextmanager
def use_list_order():
    """Print modules with `uselistorder` directives while inside (LLVM's -preserve-ll-uselistorder)."""
    with options.scoped({"preserve-ll-uselistorder": "true"}):
        yield
