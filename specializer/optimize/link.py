"""`link`: the model and the libjit bitcode in one module, internalized, dead code dropped.

The module after it is a build's `linked.ll`, printed with LLVM's use-list order (`uselistorder`
directives): some passes (LLVM's FunctionSpecialization in the llvm-funcspec variant) number their
clones by use-list order, which a re-parse without the directives does not restore, so `opt` on a
build's `linked.ll` reproduces its `optimized.ll` byte for byte only with them.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.binding as llvm

from specializer.errors import UserError
from specializer.inputs import Model
from specializer.library import libjit
from specializer.llvm import irtext, module, packweights, transforms
from specializer.llvm.passes import LINK, Pass, use_list_order
from specializer.optimize import callsites
from specializer.optimize.state import BuildContext, BuildState


def linked(model: Model, context: BuildContext, text: str | None = None) -> llvm.ModuleRef:
    """model (or `text` in its place) + libjit in one module (one fresh LLVM context),
    internalized, dead code dropped."""
    ctx = module.context()
    mod = module.link([module.parse(model.text if text is None else text, str(model.path), ctx),
                       module.parse_bitcode(context.library.bitcode, ctx)])
    libjit.check_symbols(mod)
    found = transforms.internalize(mod, model.keep)
    missing = [e for e in model.entries if e not in found]
    if missing:
        raise UserError(f"{model.path}: no entry point: '{missing[0]}' is not defined after linking")
    return mod


@dataclass(frozen=True)
class Link(Pass):
    name = "link"
    stage = LINK
    summary = ("number the model's calls (callsites.py), link the model with the libjit bitcode, internalize "
               "all but the entry and the I/O buffers, drop dead code: the module after it is a build's linked.ll "
               "(the model's float weights carried as bytes from here on, typed in every file: packweights.py)")

    def run(self, state: BuildState) -> None:
        text = callsites.number(state.as_text())
        if any(f.startswith("libjit_") for f in irtext.defined(text)):  # else: a cryptic duplicate-symbol error
            raise UserError(f"{state.where}: already linked (it defines libjit's kernels): run only the steps "
                            "after 'link' on it")
        packed = packweights.pack(text, state.shapes)
        mod = linked(state.model, state.context, packed.text)
        with use_list_order():
            state.linked = packweights.unpack(str(mod), packed.typed)
        state.packed = packed.typed
        state.set_module(mod)
