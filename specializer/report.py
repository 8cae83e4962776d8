"""The comparison of one model's variants: rows, deltas against `separate`, table and JSON."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

BASELINE = "separate"
NOTE = ("size: .text + .rodata bytes of the model and the kernel library code it uses (all objects, "
        "after --gc-sections); instructions: QEMU-counted (TCG plugin), entry call only; "
        "est. cycles: TRM-weighted estimate; deltas: ratio to `separate` and percent change")


@dataclass(frozen=True)
class VariantRow:
    variant: str
    status: str  # pass | FAIL | not run
    text: int
    rodata: int
    data: int
    bss: int
    insns: int | None = None
    cycles: int | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    clones: int | None = None  # specialized variants: clones made
    refused: int | None = None  # ... and call sites the size budget refused

    @property
    def size(self) -> int:
        return self.text + self.rodata


@dataclass(frozen=True)
class Delta:
    ratio: float
    percent: float


def delta(value: float | None, base: float | None) -> Delta | None:
    if value is None or not base:
        return None
    r = value / base
    return Delta(round(r, 4), round((r - 1) * 100, 2))


@dataclass(frozen=True)
class Comparison:
    model: str
    kind: str  # captured | xla-kernels | module
    rows: tuple[VariantRow, ...]
    options: dict = field(default_factory=dict)

    def row(self, variant: str) -> VariantRow | None:
        return next((r for r in self.rows if r.variant == variant), None)

    def deltas(self, r: VariantRow) -> dict:
        base = self.row(BASELINE)
        if base is None:
            return {"size": None, "cycles": None, "insns": None}
        return {"size": delta(r.size, base.size), "cycles": delta(r.cycles, base.cycles),
                "insns": delta(r.insns, base.insns)}

    @property
    def passed(self) -> bool:
        return all(r.status in ("pass", "not run") for r in self.rows)

    @property
    def ran(self) -> bool:
        return any(r.status != "not run" for r in self.rows)

    def as_dict(self) -> dict:
        rows = []
        for r in self.rows:
            d = asdict(r)
            d["size"] = r.size
            d["vs_separate"] = {k: (asdict(v) if v else None) for k, v in self.deltas(r).items()}
            rows.append(d)
        return {"model": self.model, "kind": self.kind, "options": self.options, "baseline": BASELINE,
                "variants": rows}


def _fmt_delta(d: Delta | None) -> str:
    if d is None:
        return "-"
    return f"{d.ratio:.3f}x ({d.percent:+.1f}%)"


def _num(v) -> str:
    return "-" if v is None else str(v)


def table(c: Comparison, title: bool = True) -> str:
    from tabulate import tabulate

    headers = ["variant", "result", ".text", ".rodata", "size", "size vs separate", "instructions",
               "est. cycles", "cycles vs separate", "max rel err", "clones (refused by budget)"]
    body = []
    for r in c.rows:
        d = c.deltas(r)
        spec = "-" if r.clones is None else f"{r.clones} ({r.refused})"
        err = "-" if r.max_rel_err is None else f"{r.max_rel_err:.2e}"
        body.append([r.variant, r.status, r.text, r.rodata, r.size, _fmt_delta(d["size"]), _num(r.insns),
                     _num(r.cycles), _fmt_delta(d["cycles"]), err, spec])
    out = tabulate(body, headers=headers, tablefmt="github", disable_numparse=True,
                   colalign=("left", "left") + ("right",) * 9)
    head = f"### {c.model}\n\n" if title else ""
    tail = "\n" if c.ran else "\nnot run: no inputs (an XLA kernel module or a module without model.json); sizes only\n"
    return head + out + "\n" + tail


def json_text(comparisons: list[Comparison] | Comparison) -> str:
    data = comparisons.as_dict() if isinstance(comparisons, Comparison) else [c.as_dict() for c in comparisons]
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def summary(comparisons: list[Comparison], variants: tuple[str, ...]) -> tuple[str, dict]:
    """Geometric means over models of each variant's size and cycle ratios to `separate`."""
    from tabulate import tabulate

    data, body = {}, []
    for v in variants:
        size, cyc = [], []
        for c in comparisons:
            r = c.row(v)
            if r is None:
                continue
            d = c.deltas(r)
            if d["size"]:
                size.append(d["size"].ratio)
            if d["cycles"]:
                cyc.append(d["cycles"].ratio)
        gs, gc = geomean(size), geomean(cyc)
        data[v] = {"size_ratio_geomean": None if gs is None else round(gs, 4),
                   "cycles_ratio_geomean": None if gc is None else round(gc, 4),
                   "models": len(size)}
        body.append([v, "-" if gs is None else f"{gs:.3f}x ({(gs - 1) * 100:+.1f}%)",
                     "-" if gc is None else f"{gc:.3f}x ({(gc - 1) * 100:+.1f}%)", len(size)])
    text = tabulate(body, headers=["variant", "size vs separate (geomean)", "cycles vs separate (geomean)",
                                   "models"], tablefmt="github", disable_numparse=True,
                    colalign=("left", "right", "right", "right"))
    return text + "\n", data
