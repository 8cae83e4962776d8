"""all-args: a multiply by a constant zero weight adds nothing to its sum.

Once the weights are constants and a kernel's loops are unrolled, a pruned weight shows up as
`fmul float %x, 0.0` feeding `fadd float %acc, %p` (or `llvm.fmuladd(%x, 0.0, %acc)`). IEEE
arithmetic keeps that multiply-add: %x could be inf or NaN, and -0 + +0 is +0. A pruned model
means "this weight contributes nothing", so here the sum becomes `%acc` itself: the fadd is
rewritten as `fadd %acc, -0.0` (which LLVM folds to %acc exactly), and the multiply dies.

The assumption, stated: activations are finite, and the sign of a zero sum may differ from
IEEE's. It is the one the compressed-sparse kernel (relayout.py) makes by skipping zeros; it is
applied only in the all-args variant, where weights are constants. `fold` is text in, text
out; `drop` applies it to an optimized module and lets LLVM fold what it left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specializer.llvm import irtext, module, transforms
from specializer.llvm.passes import Pass
from specializer.optimize.state import BuildState

_ZERO = r"(?:-?0\.000000e\+00|0x0000000000000000|0x8000000000000000)"
_VAL = irtext.LOCAL
_FMF = r"(?:(?:fast|nnan|ninf|nsz|arcp|contract|afn|reassoc) )*"
_MUL = re.compile(rf"^\s*({_VAL}) = fmul {_FMF}float (?:{_ZERO}, {_VAL}|{_VAL}, {_ZERO})\s*(?:,.*)?$")
_ADD = re.compile(rf"^(\s*)({_VAL}) = fadd ({_FMF})float ({_VAL}|\S+), ({_VAL}|\S+?)(\s*(?:,.*)?)$")
_SUB = re.compile(rf"^(\s*)({_VAL}) = fsub ({_FMF})float ({_VAL}|\S+), ({_VAL})(\s*(?:,.*)?)$")
_FMA = re.compile(rf"^(\s*)({_VAL}) = (?:tail )?call {_FMF}float @llvm\.fmuladd\.f32\("
                  rf"float (\S+), float (\S+), float ({_VAL}|\S+)\)(.*)$")


def _is_zero(operand: str) -> bool:
    return re.fullmatch(_ZERO, operand) is not None


def fold(text: str) -> tuple[str, int]:
    """`text` with every multiply-add of a constant zero factor reduced to its addend, and how
    many were dropped."""
    if "0.000000e+00" not in text and "0x0000000000000000" not in text and "0x8000000000000000" not in text:
        return text, 0
    lines = text.split("\n")
    # value names are local to a function: a zero product of one function says nothing of
    # another function's value of the same name (each line sees its whole function's set: a
    # loop's fadd can come before the fmul it adds)
    products, current = [], set()
    for line in lines:
        if line.startswith("define "):
            current = set()
        if m := _MUL.match(line):
            current.add(m.group(1))
        products.append(current)
    dropped = 0
    for i, line in enumerate(lines):
        zero_products = products[i]
        if m := _ADD.match(line):
            ind, res, fmf, a, b, tail = m.groups()
            keep = a if b in zero_products else b if a in zero_products else None
            if keep is not None:
                lines[i] = f"{ind}{res} = fadd {fmf}float {keep}, -0.000000e+00{tail}"
                dropped += 1
        elif m := _SUB.match(line):
            ind, res, fmf, a, b, tail = m.groups()
            if b in zero_products:
                lines[i] = f"{ind}{res} = fadd {fmf}float {a}, -0.000000e+00{tail}"
                dropped += 1
        elif m := _FMA.match(line):
            ind, res, x, y, acc, _ = m.groups()
            if _is_zero(x) or _is_zero(y):
                lines[i] = f"{ind}{res} = fadd float {acc}, -0.000000e+00"
                dropped += 1
    return "\n".join(lines), dropped


def drop(mod):
    """`mod` (optimized) with its zero-weight multiply-adds gone, and how many: the fold, then
    InstCombine and DCE to turn `fadd %acc, -0.0` into %acc and the multiplies into nothing."""
    text, dropped = fold(str(mod))
    if not dropped:
        return mod, 0
    mod = module.parse(text, "optimized.ll")
    transforms.cleanup(mod)
    return mod, dropped


@dataclass(frozen=True)
class Zeroweights(Pass):
    name = "zeroweights"
    summary = ("a multiply-add by a constant 0.0 becomes its addend, then InstCombine and DCE "
               "(zeroweights.py; after O2 has unrolled and folded the weights)")

    def run(self, state: BuildState) -> None:
        mod, dropped = drop(state.as_module())
        state.set_module(mod)
        state.zero_weights += dropped
