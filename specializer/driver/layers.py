"""`specialize layers`: a captured model's cost per layer in every variant, beside its layers'
shapes, MACs, weight and activation bytes (layers.json), and its RAM beside TFLite Micro's.

Each variant is built with the profile's line-table debug info (run/debuginfo.py: one line per
site of the entry, attached after `link`, so specialized clones and everything inlined keep the
location of the call they came from) and run with the profile counted per context
(run/siteprofile.py: out-of-line library code is charged to the call of the entry that ran it).
A site belongs to the layer whose named scope is in its HLO instructions' op_name (capture put
`layer<i>.<OP>` there); what belongs to no layer (the entry's own code, a copy outside every
layer) is the row "other". A variant whose attribution cannot be trusted (the contexts do not
add up, calls of the entry lost their location) is reported without per-layer figures, saying why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specializer.capture import hlo_sites, layers as layers_mod
from specializer.capture.layers import Layers
from specializer.driver.measured import build_and_measure
from specializer.driver.run import runnable
from specializer.errors import UserError
from specializer.llvm import irtext
from specializer.optimize import variants
from specializer.report import macs
from specializer.report.tables import VariantRow
from specializer.run import debuginfo
from specializer.run.siteprofile import Untrusted, per_site

OTHER = -1  # the key of what belongs to no layer


@dataclass(frozen=True)
class VariantLayers:
    variant: str
    row: VariantRow
    cycles: dict  # layer index (OTHER: no layer) -> est. cycles; empty when not trusted
    insns: dict  # likewise, executed instructions
    why_not: str = ""  # why the per-layer figures are not given
    shared_sites: tuple[str, ...] = ()  # kernels whose HLO spans several layers (charged to the first)


@dataclass(frozen=True)
class Memory:
    """The model's RAM by what holds it (capture's memory plan, model.ll's globals)."""
    io: int  # input and output buffers
    arena: int  # every temporary, one shared buffer
    scratch: int  # the kernels' shared working buffer (CMSIS-NN's context buffer)


@dataclass(frozen=True)
class LayerReport:
    model: str
    layers: Layers
    variants: tuple[VariantLayers, ...]
    macs: int  # report/macs.py's count of the model's IR
    memory: Memory


def layer_of(op_name: str, scopes: dict[str, int]) -> int | None:
    """The layer whose named scope is one component of `op_name` (None: no layer's)."""
    for part in op_name.split("/"):
        if part in scopes:
            return scopes[part]
    return None


def _site_layers(sites: list[debuginfo.Site], hlo, scopes: dict[str, int]) -> tuple[dict[int, int], list[str]]:
    """site line -> layer (OTHER), and the kernels whose HLO instructions span several layers."""
    ops = hlo.ops if hlo else {}
    out, shared = {}, []
    for s in sites:
        found = []
        for name in s.hlo:
            op = ops.get(name)
            names = [op.op_name] + [f.op_name for f in op.fused] if op else []
            for n in names:
                k = layer_of(n, scopes)
                if k is not None and k not in found:
                    found.append(k)
        out[s.line] = found[0] if found else OTHER
        if len(found) > 1:
            shared.append(s.kernel)
    return out, shared


def _lost_locations(optimized_ll: Path, entry: str) -> int:
    """Calls in the entry of the optimized module without a debug location."""
    lines = optimized_ll.read_text().split("\n")
    span = irtext.function_spans(lines).get(entry)
    if span is None:
        return 0
    return sum(1 for ln in lines[span[0] + 1:span[1]]
               if irtext.callee(ln) is not None and "!dbg " not in ln and not irtext.callee(ln).startswith("llvm."))


def _memory(text: str, fn: str) -> Memory:
    sizes = {}
    for line in text.split("\n"):
        d = irtext.global_def(line) if line.startswith("@") else None
        if d and d.kind == "global" and d.type.startswith("["):
            n = d.type[1:].split(" x ", 1)
            if len(n) == 2 and n[0].isdigit() and n[1].rstrip("]") == "i8":
                sizes[d.name] = int(n[0])
    io = sum(v for k, v in sizes.items() if k.startswith((f"{fn}_in_", f"{fn}_out")))
    return Memory(io, sizes.get(f"{fn}_arena", 0), sizes.get(f"{fn}_scratch", 0))


def layer_profile(model_ll: Path, workdir: Path, which: tuple[str, ...] = variants.VARIANTS,
                  timeout: float = 120, progress=None) -> LayerReport:
    """Build and run each variant in `which` into workdir/<variant>, cost per layer."""
    say = progress or (lambda text: None)
    model_ll = Path(model_ll)
    model = runnable(model_ll)
    found = layers_mod.load(model_ll.with_name(layers_mod.FILE_NAME))
    if found is None:
        raise UserError(f"{model_ll.with_name(layers_mod.FILE_NAME)}: no layers known for this model (capture "
                        "writes layers.json for a .tflite model and a model made by quantize(); capture it again "
                        "with this version)")
    hlo = hlo_sites.load(model_ll.with_name(hlo_sites.FILE_NAME))
    scopes = {layer.scope: layer.index for layer in found.layers}
    fn = model.manifest.function
    file_name = f"{fn}.hlo"
    out = []
    for n, v in enumerate(which, 1):
        got: dict = {}

        def annotate(text: str, got=got) -> str:
            res, got["sites"], got["of_fn"] = debuginfo.attach(text, irtext.defined(model.text), model.manifest.entry,
                                                               hlo.calls if hlo else (), file_name)
            return res

        c = build_and_measure(model, v, workdir / v, variants.Options(), timeout=timeout, annotate=annotate,
                              say=lambda text, n=n, v=v: say(f"[{n}/{len(which)}] {v}: {text}"),
                              function_profile=False, contexts=True)
        m = c.measured
        if not c.passed:
            out.append(VariantLayers(v, c.row, {}, {}, f"{v} did not pass (its outputs differ from the reference)"))
            continue
        lost = _lost_locations(c.dir / "optimized.ll", model.manifest.entry)
        if lost:
            out.append(VariantLayers(v, c.row, {}, {}, f"{lost} calls of the entry lost their debug location in "
                                     f"{v}'s optimized IR: their cost could land on the wrong layer"))
            continue
        try:
            acc = per_site(m.firmware.elf, m.result.profile, got["sites"], got["of_fn"], file_name)
        except Untrusted as e:
            out.append(VariantLayers(v, c.row, {}, {}, str(e)))
            continue
        of_site, shared = _site_layers(got["sites"], hlo, scopes)
        cyc: dict[int, int] = {}
        ins: dict[int, int] = {}
        for line, (i, k) in acc.items():
            layer = of_site.get(line, OTHER)
            cyc[layer] = cyc.get(layer, 0) + k
            ins[layer] = ins.get(layer, 0) + i
        out.append(VariantLayers(v, c.row, cyc, ins, "", tuple(shared)))
    return LayerReport(model.name, found, tuple(out), macs.count(model.text), _memory(model.text, fn))
