"""`specialize layers`' output: the layers (shapes, MACs, bytes, SNR), their est. cycles in every
variant, and the build's RAM beside TFLite Micro's arena (driver/layers.py's LayerReport)."""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict

from specializer.report.tables import github_table

OTHER = -1  # driver/layers.py's key of what belongs to no layer (not imported: the report stage is below)

NOTE = textwrap.fill(
    'MACs: conv output values x KH x KW x Cin, depthwise x KH x KW, dense x inputs; weights: the '
    "layer's constant arrays as the model holds them (int8 weights + int32 bias; float32 for float);"
    " acts: its activation inputs + its output; SNR: a quantize() block's output against the float "
    "model's same layer (dB, on the example input). est. cycles: QEMU-counted instructions, TRM-"
    'weighted, each charged by its debug line to the call of the entry it runs for (library code by '
    'the call that reached it); a kernel XLA fused across two layers counts for the layer of its '
    "op_name; other: code of no layer (the entry's own); the totals are each run's est. cycles. "
    "Every variant is built with its default settings (unroll threshold LLVM's), the comparison may "
    'keep another build of dims and all-args.',
    100, break_on_hyphens=False)


def _shape(t) -> str:
    return "x".join(map(str, t.shape)) or "scalar"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 2] + ".."


def best(report) -> object | None:
    """The trusted variant with the fewest est. cycles (None: no variant's layers are known)."""
    ok = [v for v in report.variants if v.cycles]
    return min(ok, key=lambda v: sum(v.cycles.values())) if ok else None


def layer_rows(report) -> str:
    snr = any(layer.snr_db is not None for layer in report.layers.layers)
    headers = ["#", "op", "name", "output", "MACs", "weights", "acts"] + (["SNR dB"] if snr else [])
    body = []
    for layer in report.layers.layers:
        out = ", ".join(_shape(t) + ("" if t.dtype == "int8" else f" {t.dtype}") for t in layer.outputs)
        db = [f"{layer.snr_db:.1f}" if layer.snr_db is not None else "-"] if snr else []
        body.append([str(layer.index), layer.op, _cut(layer.name, 24), out, f"{layer.macs:,}",
                     f"{layer.weight_bytes:,}", f"{layer.activation_bytes:,}"] + db)
    ls = report.layers.layers
    body.append(["", "total", "", "", f"{sum(x.macs for x in ls):,}", f"{sum(x.weight_bytes for x in ls):,}",
                 f"{sum(x.activation_bytes for x in ls):,}"] + ([""] if snr else []))
    return github_table(body, headers, ("right", "left", "left", "left") + ("right",) * (len(headers) - 4))


_SHORT = {"DEPTHWISE_CONV_2D": "DEPTHWISE", "FULLY_CONNECTED": "FC", "AVERAGE_POOL_2D": "AVG_POOL",
          "MAX_POOL_2D": "MAX_POOL"}


def cycle_rows(report) -> str:
    vs = report.variants
    b = best(report)
    headers = ["#", "op"] + [v.variant for v in vs] + (["c/MAC", "%"] if b else [])
    keys = [layer.index for layer in report.layers.layers] + [OTHER]
    ops = {layer.index: layer.op for layer in report.layers.layers} | {OTHER: "other"}
    macs = {layer.index: layer.macs for layer in report.layers.layers}
    total_b = sum(b.cycles.values()) if b else 0
    body = []
    for k in keys:
        row = ["" if k == OTHER else str(k), _SHORT.get(ops[k], _cut(ops[k], 12))]
        row += [f"{v.cycles.get(k, 0):,}" if v.cycles else "n/a" for v in vs]
        if b:
            c = b.cycles.get(k, 0)
            row += [f"{c / macs[k]:.2f}" if macs.get(k) else "-", f"{100 * c / (total_b or 1):.1f}"]
        body.append(row)
    total = ["", "total"] + [f"{v.row.cycles:,}" if v.row.cycles is not None else "n/a" for v in vs]
    if b:
        n = sum(layer.macs for layer in report.layers.layers)  # report.macs misses convs left to XLA
        total += [f"{total_b / n:.2f}" if n else "-", "100.0"]
    body.append(total)
    return github_table(body, headers, ("right", "left") + ("right",) * (len(headers) - 2))


def ram_rows(report) -> str:
    m = report.memory
    vs = [v for v in report.variants if v.row.stack is not None]
    headers = ["RAM (bytes)"] + [v.variant for v in vs]

    def same(x):
        return [f"{x:,}"] * len(vs)

    static = [v.row.data + v.row.bss + v.row.lib_ram for v in vs]
    body = [["inputs + outputs"] + same(m.io), ["arena (activations)"] + same(m.arena),
            ["scratch (kernels)"] + same(m.scratch),
            ["other static"] + [f"{s - m.io - m.arena - m.scratch:,}" for s in static],
            ["stack (peak)"] + [f"{v.row.stack:,}" for v in vs],
            ["total"] + [f"{s + v.row.stack:,}" for s, v in zip(static, vs)]]
    text = github_table(body, headers, ("left",) + ("right",) * len(vs))
    arena = report.layers.tflite_micro_arena
    if arena is not None:
        text += (f"\nTFLite Micro's arena for the same file: {arena:,} bytes (its allocation report on the host:\n"
                 "activations, input and output tensors, its own structures; not its stack or static data)")
    return text


def table(report) -> str:
    b = best(report)
    title = "est. cycles per layer" + (f" (c/MAC and %: {b.variant}, the fewest est. cycles)" if b else "")
    parts = [layer_rows(report), "", title, cycle_rows(report)]
    why = [f"{v.variant}: per-layer figures not given: {v.why_not}" for v in report.variants if v.why_not]
    shared = sorted({k for v in report.variants for k in v.shared_sites})
    if shared:
        why.append(f"kernels spanning two layers (counted for the first): {', '.join(shared)}")
    parts += why
    parts += ["", ram_rows(report), "", NOTE]
    return "\n".join(parts) + "\n"


def as_json(report) -> str:
    b = best(report)
    d = {"model": report.model, "macs": report.macs, "best": b.variant if b else None,
         "layers": json.loads(report.layers.dumps()), "memory": asdict(report.memory),
         "variants": [{"variant": v.variant, "status": v.row.status, "cycles": v.row.cycles, "insns": v.row.insns,
                       "static_ram": v.row.data + v.row.bss + v.row.lib_ram, "stack": v.row.stack,
                       "why_not": v.why_not or None, "shared_kernels": list(v.shared_sites),
                       "per_layer": None if not v.cycles else [
                           {"layer": None if k == OTHER else k, "cycles": v.cycles[k], "insns": v.insns.get(k, 0)}
                           for k in sorted(v.cycles, key=lambda k: (k == OTHER, k))]}
                      for v in report.variants]}
    return json.dumps(d, indent=1) + "\n"
