"""Define the vector forms of XLA's math functions (`xla.tanh.v8f32`, ...) in IR.

XLA's vectorized loops call `<N x float> @xla.F.vNf32(<N x float>)`; Cortex-M4 has no vector
unit, so each is defined as N calls of the scalar `xla.F.f32` that libjit provides.
"""

from __future__ import annotations

import re

_VECTOR_DECL = re.compile(r'^declare <(\d+) x float> @"?xla\.(\w+)\.v(\d+)f32"?\(<\d+ x float>\)', re.M)


def vector_wrappers(module_text: str) -> str:
    """IR text defining every vector XLA math function `module_text` declares (may be empty)."""
    out = []
    for m in sorted(set(_VECTOR_DECL.findall(module_text))):
        n, fn = int(m[0]), m[1]
        vec = f"<{n} x float>"
        body = [f"define linkonce_odr {vec} @xla.{fn}.v{n}f32({vec} %x) {{"]
        acc = "poison"
        for i in range(n):
            body.append(f"  %e{i} = extractelement {vec} %x, i32 {i}")
            body.append(f"  %r{i} = call float @xla.{fn}.f32(float %e{i})")
            body.append(f"  %v{i} = insertelement {vec} {acc}, float %r{i}, i32 {i}")
            acc = f"%v{i}"
        body += [f"  ret {vec} {acc}", "}", f"declare float @xla.{fn}.f32(float)", ""]
        out += body
    return "\n".join(out)
