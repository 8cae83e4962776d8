"""`specialize capture`: a JAX function, a .tflite or an .onnx model as one Cortex-M4 module and its manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

from specializer.cli.args import output_dir
from specializer.errors import UserError


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="specialize capture",
                                description="Capture a JAX function, a .tflite or an .onnx model, as one Cortex-M4 "
                                "LLVM module. A .tflite model's reference outputs are TFLite Micro's, an .onnx "
                                "model's onnx.reference's (ReferenceEvaluator): the interpreter runs on the same "
                                "input, and JAX's outputs must equal them (int8, and a QDQ model's dequantized "
                                "outputs, exactly; float within 1e-4 relative).")
    p.add_argument("target", metavar="FILE.py:FN | FILE.tflite | FILE.onnx")
    p.add_argument("--input", metavar="FILE.npy", type=Path,
                   help="a .tflite or .onnx model's example input (its shape and dtype; default: a "
                   "deterministic input the reader makes), or a stack of N inputs: the first is measured, "
                   "every one is checked on QEMU against the reference outputs")
    p.add_argument("--examples", type=int, default=1, metavar="N",
                   help="without --input: N deterministic inputs, the first measured, every one checked "
                   "(default 1)")
    p.add_argument("--every-layer", action="store_true",
                   help="a .tflite model's outputs are every operator's output, so each layer is checked "
                   "against TFLite Micro's (a different program from the model alone: for checking, not "
                   "measuring)")
    p.add_argument("-o", "--output", required=True, type=output_dir, metavar="DIR",
                   help="writes DIR/model.ll and DIR/model.json")
    p.add_argument("--ir-dots", action="store_true",
                   help="let XLA emit its dots as LLVM IR (its experimental IR GEMM) instead of runtime calls")
    p.add_argument("--timeout", type=float, default=600, metavar="SECONDS",
                   help="give up when JAX's reference run of the function takes longer (default 600)")
    a = p.parse_args(argv)
    from specializer.capture import imported
    from specializer.capture.capture import capture

    if imported.is_model_file(Path(a.target)):  # the function is the reader's: no :FN
        path, fn = a.target, None
    elif ":" not in a.target:
        raise UserError(f"'{a.target}': expected FILE.py:FUNCTION, FILE.tflite or FILE.onnx")
    else:
        path, fn = a.target.rsplit(":", 1)
    if a.examples < 1 or (a.input is not None and a.examples != 1):
        raise UserError(f"--examples {a.examples}: give N >= 1, and not with --input (its stack gives the inputs)")
    c = capture(Path(path), fn, Path(a.output), ir_dots=a.ir_dots, timeout=a.timeout, example=a.input,
                examples=a.examples, every_layer=a.every_layer)
    print(f"wrote {c.model_ll} and {c.manifest_json}")
    return 0
