"""Multiply-accumulates of a captured model: what its libjit dot and convolution calls compute.

Read off the constant shape arguments of the calls capture emits (specializer/libcalls.py), so
the count is the model's, not any variant's: est. cycles / MAC compares variants and models on
one scale. Dots XLA keeps as its own IR are not counted (capture sends every standalone dot
to libjit; dots fused into elementwise kernels are small).
"""

from __future__ import annotations

from .specialize import direct_calls

KERNELS = ("libjit_matmul_f32", "libjit_matmul_s8_s32", "libjit_matmul_s32", "libjit_conv2d_f32")


def count(text: str) -> int:
    """MACs of every libjit dot/convolution call in a captured model's IR (0 if none)."""
    total = 0
    for call in direct_calls(text.split("\n"), KERNELS):
        if call.callee.startswith("libjit_matmul"):
            v = call.ints(3, 4)
            if v:
                batch, rows, k, n = v
                total += batch * rows * k * n
        else:
            v = call.ints(4, 16)
            if v:
                batch, _, _, in_c, out_h, out_w, out_c, k_h, k_w = v[:9]
                groups = v[15]
                total += batch * out_h * out_w * out_c * k_h * k_w * (in_c // max(groups, 1))
    return total
