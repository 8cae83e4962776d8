"""The comparison of one model's variants: rows, deltas against `separate`, table and JSON."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

BASELINE = "separate"
BASELINES = ("separate", "lto")  # every row's deltas are shown against both
PAIR = ("all-args", "dims")  # and all-args against dims, the comparison the product is about
NOTE = ("size: .text + .rodata bytes of the model and the kernel library code it uses (all objects, "
        "after --gc-sections); instructions: QEMU-counted (TCG plugin), entry call only; "
        "est. cycles: TRM-weighted estimate; vs X: ratio to variant X (JSON: ratio and percent change); "
        "rel err: max relative error against JAX within the model's tolerance (<=) or not (>)")


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
    rtol: float | None = None  # the manifest's relative tolerance the errors were judged by

    def error_check(self) -> dict:
        """What reports keep of the errors: within the tolerance or not, and the tolerance. The digits
        depend on the host CPU that computed JAX's reference (and sit near decade boundaries, so no
        rounding is stable either); they stay in the row, out of tables and JSON."""
        within = None if self.max_rel_err is None or self.rtol is None else self.max_rel_err <= self.rtol
        return {"rtol": self.rtol, "within_rtol": within}

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
    macs: int | None = None  # multiply-accumulates of the model's dot/conv kernels (macs.py)

    def per_mac(self, r: VariantRow) -> float | None:
        """est. cycles per multiply-accumulate."""
        return round(r.cycles / self.macs, 2) if self.macs and r.cycles else None

    def row(self, variant: str) -> VariantRow | None:
        return next((r for r in self.rows if r.variant == variant), None)

    def deltas(self, r: VariantRow, baseline: str = BASELINE) -> dict:
        base = self.row(baseline)
        if base is None or r is None or base.status not in ("pass", "not run") or r.status not in ("pass", "not run"):
            return {"size": None, "cycles": None, "insns": None}
        return {"size": delta(r.size, base.size), "cycles": delta(r.cycles, base.cycles),
                "insns": delta(r.insns, base.insns)}

    def pair(self) -> dict:
        """all-args against dims."""
        return self.deltas(self.row(PAIR[0]), PAIR[1]) if self.row(PAIR[0]) else {"size": None, "cycles": None,
                                                                                  "insns": None}

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
            for k in ("max_abs_err", "max_rel_err"):  # host-dependent digits: see VariantRow.error_check
                del d[k]
            d |= r.error_check()
            d["size"] = r.size
            d["cycles_per_mac"] = self.per_mac(r)
            for b in BASELINES:
                d[f"vs_{b}"] = {k: (asdict(v) if v else None) for k, v in self.deltas(r, b).items()}
            rows.append(d)
        pair = {k: (asdict(v) if v else None) for k, v in self.pair().items()}
        return {"model": self.model, "kind": self.kind, "options": self.options, "baseline": BASELINE,
                "macs": self.macs,
                "variants": rows, "all_args_vs_dims": pair}


def _fmt_delta(d: Delta | None) -> str:
    if d is None:
        return "-"
    return f"{d.ratio:.3f}x"


def _num(v) -> str:
    return "-" if v is None else str(v)


def table(c: Comparison, title: bool = True) -> str:
    from tabulate import tabulate

    headers = ["variant", "result", ".text", ".rodata", "size", "vs separate", "vs lto", "instructions",
               "est. cycles", "vs separate", "vs lto", "rel err", "clones (refused)"]
    body = []
    for r in c.rows:
        d, dl = c.deltas(r), c.deltas(r, "lto")
        spec = "-" if r.clones is None else f"{r.clones} ({r.refused})"
        within = r.error_check()["within_rtol"]
        err = "-" if within is None else f"{'<=' if within else '>'} {r.rtol:g}"
        body.append([r.variant, r.status, r.text, r.rodata, r.size, _fmt_delta(d["size"]), _fmt_delta(dl["size"]),
                     _num(r.insns), _num(r.cycles), _fmt_delta(d["cycles"]), _fmt_delta(dl["cycles"]), err, spec])
    out = tabulate(body, headers=headers, tablefmt="github", disable_numparse=True,
                   colalign=("left", "left") + ("right",) * 11)
    if c.macs and any(c.per_mac(r) for r in c.rows):
        out += (f"\n\n{c.macs:,} MACs in dot/conv kernels; est. cycles/MAC: "
                + ", ".join(f"{r.variant} {c.per_mac(r):.2f}" for r in c.rows if c.per_mac(r)))
    p = c.pair()
    if p["size"] is not None:
        out += ("\n" if c.macs else "\n\n") + (f"all-args vs dims: size {_fmt_delta(p['size'])}"
                + (f", est. cycles {_fmt_delta(p['cycles'])}" if p["cycles"] else ""))
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


def _geo(comparisons: list[Comparison], variant: str, baseline: str) -> dict:
    size, cyc = [], []
    for c in comparisons:
        r = c.row(variant)
        if r is None:
            continue
        d = c.deltas(r, baseline)
        if d["size"]:
            size.append(d["size"].ratio)
        if d["cycles"]:
            cyc.append(d["cycles"].ratio)
    gs, gc = geomean(size), geomean(cyc)
    return {"size": None if gs is None else round(gs, 4), "cycles": None if gc is None else round(gc, 4),
            "models": len(size)}


def summary(comparisons: list[Comparison], variants: tuple[str, ...]) -> tuple[str, dict]:
    """Geometric means over models of each variant's size and cycle ratios to `separate` and to
    `lto`, and of all-args' ratios to dims."""
    from tabulate import tabulate

    def fmt(v):
        return "-" if v is None else f"{v:.3f}x"

    data, body = {}, []
    for v in variants:
        by = {b: _geo(comparisons, v, b) for b in BASELINES}
        data[v] = {f"vs_{b}": by[b] for b in BASELINES}
        body.append([v, fmt(by["separate"]["size"]), fmt(by["lto"]["size"]), fmt(by["separate"]["cycles"]),
                     fmt(by["lto"]["cycles"]), by["separate"]["models"]])
    if PAIR[0] in variants and PAIR[1] in variants:
        g = _geo(comparisons, *PAIR)
        data["all_args_vs_dims"] = g
        body.append([f"{PAIR[0]} vs {PAIR[1]}", fmt(g["size"]), "", fmt(g["cycles"]), "", g["models"]])
    text = tabulate(body, headers=["variant", "size vs separate", "size vs lto", "cycles vs separate",
                                   "cycles vs lto", "models"], tablefmt="github", disable_numparse=True,
                    colalign=("left", "right", "right", "right", "right", "right"))
    return text + "\n", data


def per_mac_table(comparisons: list[Comparison], variants: tuple[str, ...]) -> str:
    """est. cycles/MAC of every model with dot/conv kernels, one column per variant."""
    from tabulate import tabulate

    body = []
    for c in comparisons:
        if not c.macs:
            continue
        cells = []
        for v in variants:
            r = c.row(v)
            pm = c.per_mac(r) if r else None
            cells.append("-" if pm is None else f"{pm:.2f}")
        body.append([c.model, f"{c.macs:,}", *cells])
    if not body:
        return ""
    return tabulate(body, headers=["model", "MACs", *variants], tablefmt="github", disable_numparse=True,
                    colalign=("left",) + ("right",) * (len(variants) + 1)) + "\n"
