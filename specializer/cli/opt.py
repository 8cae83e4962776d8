"""`specialize opt`: a textual pass pipeline run on a module, in the manner of LLVM's opt -passes=."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path



OPT_EPILOG = """\
A pipeline is PASS or PASS{OPTION=VALUE,...}, comma-separated: 'O2', 'specialize{mode=all-args,rounds=4}'
(an option left out takes its default). 'specialize --print-pipeline' prints each variant's.
Stages: 'relayout' acts on the model before it is linked (IN.ll is then a model.ll with model.json
next to it; without 'link' the output is the model it rewrote), 'link' links it with the libjit
kernels and internalizes it (after it: a build's linked.ll), the other passes act on a module. A
build writes DIR/<variant>/pipeline.txt, the steps after 'link': rerun them on its linked.ll to get
its optimized.ll byte for byte; drop steps from the end (or the middle) to bisect.
IN.ll is read as written, as LLVM's opt reads it, unless it is a model (model.json next to it, or a
pipeline with model passes): then as 'specialize' reads it (an XLA kernel dump normalized and
retargeted, DSP asm as intrinsics). Those rewrites are passes too: normalize, retarget, fminmax,
inline-asm. Without -passes the module is read, verified and printed.

passes:
"""


def main(argv: list[str]) -> int:
    from specializer.optimize import pipeline

    p = argparse.ArgumentParser(prog="specialize opt", formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=OPT_EPILOG + pipeline.help_text(),
                                description="Run a textual pass pipeline on an LLVM module (in the manner of "
                                            "LLVM's opt -passes=).")
    p.add_argument("input", metavar="IN.ll", help="a module (e.g. a build's linked.ll), or a model.ll when the "
                   "pipeline has 'link'")
    p.add_argument("-p", "-passes", "--passes", dest="passes", default="", metavar="PIPELINE",
                   help="the passes to run, e.g. \"$(cat DIR/all-args/pipeline.txt)\" (default: none)")
    p.add_argument("-o", "--output", default="-", metavar="OUT.ll", help="the result as text IR (default stdout)")
    p.add_argument("--diff-text", action="store_true", help="write the result as diff-oriented text instead "
                   "(what a build's *.diff.ll holds: specializer/optimize/difftext.py)")
    p.add_argument("--manifest", metavar="model.json", help="the model's manifest: its weights are tensors, which "
                   "specialize{mode=dims} never specializes, and the log shows their shapes (a model.ll input "
                   "reads the model.json next to it)")
    p.add_argument("--log", metavar="FILE", help="also write the specialization log to FILE")
    a = p.parse_args(argv)
    from specializer import files, inputs
    from specializer.capture.manifest import Manifest
    from specializer.llvm import irtext, module, read
    from specializer.optimize import difftext
    from specializer.optimize.state import BuildContext, BuildState
    from specializer.optimize.variants import Optimized

    # a bad pipeline is reported before any input is read
    steps = pipeline.parse(a.passes) if a.passes.strip() else ()
    path = Path(a.input)
    if pipeline.needs_model(steps) or inputs.manifest_path(path).is_file():  # named by its file, as a build does
        # the one place `opt` reads the environment: which CMSIS-NN the kernel library is built with
        state = BuildState.of_model(inputs.load(path), BuildContext.default() if pipeline.needs_model(steps) else None)
    else:  # as written, so the rewrites reading does can be tested as passes; a module keeps its ID
        text = read.read(path)  # (a build's linked.ll: the model's), so the output is the build's
        module_id = irtext.module_id(text)
        state = BuildState(path.name if module_id is None else module_id, str(path), text, untrusted=True)
    if a.manifest:
        state.shapes = inputs.tensor_shapes(Manifest.load(Path(a.manifest)))
    s = pipeline.run(steps, state)
    out = s.typed(str(s.as_module()))  # the weights typed again (packweights.py)
    if a.diff_text:
        mod = module.parse(out, s.where) if s.packed else s.as_module()
        out = difftext.render_module(mod, difftext.clone_notes(s.spec.sites) if s.spec else None).text()
    if a.log:
        files.write(Path(a.log), Optimized(s.module, s.linked or "", s.spec, s.relaid, s.zero_weights,
                                           s.aliases, steps).log_text())
    if a.output == "-":
        sys.stdout.write(out)
    else:
        files.write(Path(a.output), out)
    return 0
