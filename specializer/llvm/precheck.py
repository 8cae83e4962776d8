"""Constructs that parse, yet make LLVM abort or crash later when built for Cortex-M4.

LLVM reports these with `LLVM ERROR` + abort(), a failed assertion, or a stack overflow, all of
which kill the process; so the input is scanned for them first and each is named on one line.
(`isolate` still catches what no scan foresees.) One regex pass per class: cheap on big modules.
"""

from __future__ import annotations

import re

from specializer.errors import UserError

# Deeper than this, LLVM's recursive parser overflows the stack (60,000 nested arrays crash it;
# 20,000 parse); no real model comes near.
MAX_NESTING = 10_000

_FOREIGN_INTRINSIC = re.compile(
    r"@llvm\.(x86|aarch64|ppc|amdgcn|r600|nvvm|wasm|riscv|hexagon|mips|s390|ve|loongarch|bpf|spv|dx|xcore)\.[\w.]+")
_SCALABLE = re.compile(r"<\s*vscale\s+x\b")
# (no \b: a word-boundary test at every position costs seconds on a model with megabytes of weights)
_FOREIGN_FLOAT = re.compile(r"(?<![\w.$])(x86_fp80|ppc_fp128|x86_amx|x86_mmx)(?![\w.$])")
_INLINE_ASM = re.compile(r"(?<![\w.$\"])asm\s+(?:(?:sideeffect|alignstack|inteldialect|unwind)\s+)*\"|^module\s+asm\s", re.M)
_NESTED = re.compile(r"[\[{<(](?:\s*(?:\d+\s+x\s+)?[\[{<(]){63,}")
# a literal each match must contain: most modules skip the regex entirely
_NEEDS = {"_FOREIGN_FLOAT": ("x86_", "ppc_fp128"), "_INLINE_ASM": ("asm",)}
_ARCH_NAMES = {"x86": "x86", "aarch64": "AArch64", "ppc": "PowerPC", "amdgcn": "AMDGPU", "r600": "AMDGPU",
               "nvvm": "NVPTX", "wasm": "WebAssembly", "riscv": "RISC-V", "hexagon": "Hexagon",
               "mips": "MIPS", "s390": "SystemZ", "ve": "VE", "loongarch": "LoongArch", "bpf": "BPF",
               "spv": "SPIR-V", "dx": "DirectX", "xcore": "XCore"}


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _comment_free(text: str, at: int) -> bool:
    """Whether position `at` is code, not inside a comment on its line."""
    start = text.rfind("\n", 0, at) + 1
    return ";" not in text[start:at]


def _first(pattern: re.Pattern, text: str, needs: tuple[str, ...] = ()) -> re.Match | None:
    if needs and not any(n in text for n in needs):
        return None
    return next((m for m in pattern.finditer(text) if _comment_free(text, m.start())), None)


def check(text: str, where: str) -> None:
    """Raise UserError naming the first construct that would kill LLVM's Cortex-M4 backend."""
    m = _first(_FOREIGN_INTRINSIC, text)
    if m:
        raise UserError(f"{where}:{_line(text, m.start())}: calls the {_ARCH_NAMES[m.group(1)]} intrinsic "
                        f"{m.group(0)[1:]}, which Cortex-M4 has no instruction for")
    m = _first(_SCALABLE, text)
    if m:
        raise UserError(f"{where}:{_line(text, m.start())}: scalable vector type (<vscale x ...>): "
                        "Cortex-M4 has no scalable vectors")
    m = _first(_FOREIGN_FLOAT, text, _NEEDS["_FOREIGN_FLOAT"])
    if m:
        raise UserError(f"{where}:{_line(text, m.start())}: type {m.group(1)} exists only on another "
                        "architecture; Cortex-M4 cannot build it")
    m = _first(_INLINE_ASM, text, _NEEDS["_INLINE_ASM"])
    if m:
        raise UserError(f"{where}:{_line(text, m.start())}: inline assembly is not supported "
                        "(objects are emitted without an assembler; llvmlite has none for ARM)")
    for m in _NESTED.finditer(text):
        depth = sum(m.group(0).count(c) for c in "[{<(")
        if depth > MAX_NESTING:
            raise UserError(f"{where}:{_line(text, m.start())}: types or constants nested {depth} deep "
                            f"(at most {MAX_NESTING:,}): LLVM's parser would overflow its stack")
