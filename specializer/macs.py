"""Multiply-accumulates of a captured model: what its libjit dot and convolution calls compute.

Read off the constant shape arguments of the calls capture emits (specializer/libcalls.py), so
the count is the model's, not any variant's: est. cycles / MAC compares variants and models on
one scale. Dots XLA keeps as its own IR are not counted (capture sends every standalone dot
to libjit; dots fused into elementwise kernels are small).
"""

from __future__ import annotations

import re

from .specialize import _split_args

_CALL = re.compile(r"call void @(libjit_matmul_f32|libjit_matmul_s8_s32|libjit_conv2d_f32)\(")
_INT = re.compile(r"^i32 (-?\d+)$")


def _ints(args: list[str]) -> list[int] | None:
    out = []
    for a in args:
        m = _INT.match(a)
        if not m:
            return None
        out.append(int(m.group(1)))
    return out


def count(text: str) -> int:
    """MACs of every libjit dot/convolution call in a captured model's IR (0 if none)."""
    total = 0
    for line in text.split("\n"):
        m = _CALL.search(line) if line.startswith("  ") else None
        if not m:
            continue
        args, _ = _split_args(line, m.end() - 1)
        if m.group(1).startswith("libjit_matmul"):
            v = _ints(args[3:7])
            if v:
                batch, rows, k, n = v
                total += batch * rows * k * n
        else:
            v = _ints(args[4:20])
            if v:
                batch, _, _, in_c, out_h, out_w, out_c, k_h, k_w = v[:9]
                groups = v[15]
                total += batch * out_h * out_w * out_c * k_h * k_w * (in_c // max(groups, 1))
    return total
