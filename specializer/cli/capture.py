"""`specialize capture`: a JAX function as one Cortex-M4 module and its manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

from specializer.errors import UserError


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="specialize capture",
                                description="Capture a JAX function as one Cortex-M4 LLVM module.")
    p.add_argument("target", metavar="FILE.py:FN")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="writes DIR/model.ll and DIR/model.json")
    p.add_argument("--ir-dots", action="store_true",
                   help="let XLA emit its dots as LLVM IR (its experimental IR GEMM) instead of runtime calls")
    p.add_argument("--timeout", type=float, default=600, metavar="SECONDS",
                   help="give up when JAX's reference run of the function takes longer (default 600)")
    a = p.parse_args(argv)
    if ":" not in a.target:
        raise UserError(f"'{a.target}': expected FILE.py:FUNCTION")
    path, fn = a.target.rsplit(":", 1)
    from specializer.capture.capture import capture

    c = capture(Path(path), fn, Path(a.output), ir_dots=a.ir_dots, timeout=a.timeout)
    print(f"wrote {c.model_ll} and {c.manifest_json}")
    return 0
