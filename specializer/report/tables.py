"""The comparison of one model's variants: rows, deltas against `separate`, table and JSON."""

from __future__ import annotations

import json
import math
import textwrap
from dataclasses import asdict, dataclass, field, fields

BASELINE = "separate"
BASELINES = ("separate", "lto")  # every row's deltas are shown against both
PAIR = ("all-args", "dims")  # and all-args against dims, the comparison the product is about
DELTAS = ("flash", "ram", "cycles", "insns")  # the metrics every row is compared on
NOTE_TEXT = (
    "flash: code of the model, the kernel library and the libc/libm it reaches, weights and "
    "constants, and initialized data (the model linked alone, --gc-sections); RAM: .data + .bss "
    "(buffers, arena, scratch, libc's data) + stack: the measured call's peak stack (painted and "
    "scanned); instructions: QEMU-counted (TCG plugin), entry call only; est. cycles: TRM-weighted "
    "estimate; vs lto: ratio to the lto variant (JSON: to every baseline, ratio and percent change); "
    "rel err: max relative error against {reference} within the model's tolerance (<=) or not (>). "
    "JSON rows hold the breakdown: text, rodata, data, bss, lib_flash, lib_ram, stack")


def note(reference: str = "JAX") -> str:
    """The note under a table: what each column is, the outputs checked against `reference`'s."""
    return textwrap.fill(NOTE_TEXT.format(reference=reference), 100, break_on_hyphens=False)


NOTE = note()


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
    lib_flash: int = 0  # libc/libm/libgcc code, constants and data image the model reaches
    lib_ram: int = 0  # ... and their .data + .bss
    stack: int | None = None  # peak stack of the measured call; None when not run
    unroll_threshold: int | None = None  # specializing variants: the unroll threshold built with (None: LLVM's)
    shape_only: tuple = ()  # all-args: the model's calls specialized shape-only, by measurement (callchoice.py)

    def error_check(self) -> dict:
        """What reports keep of the errors: within the tolerance or not, and the tolerance. The digits
        depend on the host CPU that computed JAX's reference (and sit near decade boundaries, so no
        rounding is stable either); they stay in the row, out of tables and JSON."""
        within = None if self.max_rel_err is None or self.rtol is None else self.max_rel_err <= self.rtol
        return {"rtol": self.rtol, "within_rtol": within}

    @property
    def size(self) -> int:
        """.text + .rodata of the model objects: the figure reports had before `flash` (kept in
        JSON so that `specialize diff` can compare against an older baseline)."""
        return self.text + self.rodata

    @property
    def flash(self) -> int:
        """Everything the model puts in flash: code (model, kernels, libc/libm), constants, .data's image."""
        return self.text + self.rodata + self.data + self.lib_flash

    @property
    def static_ram(self) -> int:
        return self.data + self.bss + self.lib_ram

    @property
    def ram(self) -> int | None:
        """Static RAM + the peak stack; None when the stack was not measured (not run)."""
        return None if self.stack is None else self.static_ram + self.stack


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
    reference: str = "JAX"  # whose outputs every run is checked against (Manifest.reference)
    checked_inputs: int = 1  # on how many inputs (Manifest.checked_inputs)
    tolerance: str = ""  # what a tolerance other than the default rests on (Manifest.rtol_basis)

    def per_mac(self, r: VariantRow) -> float | None:
        """est. cycles per multiply-accumulate."""
        return round(r.cycles / self.macs, 2) if self.macs and r.cycles else None

    def row(self, variant: str) -> VariantRow | None:
        return next((r for r in self.rows if r.variant == variant), None)

    def deltas(self, r: VariantRow, baseline: str = BASELINE) -> dict:
        base = self.row(baseline)
        if base is None or r is None or base.status not in ("pass", "not run") or r.status not in ("pass", "not run"):
            return dict.fromkeys(DELTAS)
        return {"flash": delta(r.flash, base.flash), "ram": delta(r.ram, base.ram),
                "cycles": delta(r.cycles, base.cycles), "insns": delta(r.insns, base.insns)}

    def pair(self) -> dict:
        """all-args against dims."""
        return self.deltas(self.row(PAIR[0]), PAIR[1]) if self.row(PAIR[0]) else dict.fromkeys(DELTAS)

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
            d |= {"size": r.size, "flash": r.flash, "ram": r.ram, "static_ram": r.static_ram}
            d["cycles_per_mac"] = self.per_mac(r)
            for b in BASELINES:
                d[f"vs_{b}"] = {k: (asdict(v) if v else None) for k, v in self.deltas(r, b).items()}
            rows.append(d)
        pair = {k: (asdict(v) if v else None) for k, v in self.pair().items()}
        checked = {} if (self.reference, self.checked_inputs) == ("JAX", 1) else {  # JAX's: as before
            "reference": self.reference, "checked_inputs": self.checked_inputs}
        if self.tolerance:
            checked["tolerance"] = self.tolerance
        return {"model": self.model, "kind": self.kind, "options": self.options, "baseline": BASELINE,
                "macs": self.macs, **checked,
                "variants": rows, "all_args_vs_dims": pair}

    @classmethod
    def from_dict(cls, d: dict) -> Comparison:
        """The comparison `as_dict` wrote (a CI shard's report read back to be merged). The error
        digits are not in JSON, only the judgement: a row within its tolerance reads back with
        error 0, one outside with an infinite error, so tables and JSON say the same again."""
        names = {f.name for f in fields(VariantRow)}
        rows = []
        for r in d["variants"]:
            row = {k: v for k, v in r.items() if k in names}
            row["shape_only"] = tuple(row.get("shape_only", ()))
            within = r.get("within_rtol")
            err = None if within is None else (0.0 if within else float("inf"))
            rows.append(VariantRow(**row, max_abs_err=err, max_rel_err=err))
        return cls(d["model"], d["kind"], tuple(rows), d.get("options", {}), d.get("macs"),
                   d.get("reference", "JAX"), d.get("checked_inputs", 1), d.get("tolerance", ""))


def _fmt_delta(d: Delta | None) -> str:
    if d is None:
        return "-"
    return f"{d.ratio:.3f}x"


def _num(v) -> str:
    return "-" if v is None else str(v)


WIDTH = 100  # tables and notes fit a terminal of this many columns; the rest is in JSON


def _lines(text: str) -> str:
    return textwrap.fill(text, WIDTH, break_on_hyphens=False)


def github_table(body: list, headers: list, colalign: tuple) -> str:
    """A GitHub-flavoured table without tabulate's 2-column minimum padding around headers."""
    import tabulate as tab

    saved, tab.MIN_PADDING = tab.MIN_PADDING, 0
    try:
        return tab.tabulate(body, headers=headers, tablefmt="github", disable_numparse=True, colalign=colalign)
    finally:
        tab.MIN_PADDING = saved


def _ranges(numbers) -> str:
    """(1, 2, 3, 7, 9, 10) -> '1-3, 7, 9-10'."""
    out, run = [], []
    for n in sorted(numbers):
        if run and n != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(n)
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def _by_variant(c: Comparison, cell) -> str:
    """'all variants X' when every row says the same, else 'v1 X, v2 Y'."""
    cells = [(r.variant, cell(r)) for r in c.rows if cell(r) is not None]
    if not cells:
        return ""
    if len(cells) == len(c.rows) > 1 and len({x for _, x in cells}) == 1:
        return f"every variant {cells[0][1]}"
    return ", ".join(f"{v} {x}" for v, x in cells)


def _err(r: VariantRow) -> str | None:
    if r.status == "FAIL":  # integer outputs must match exactly, whatever the float tolerance says
        return "does not match"
    within = r.error_check()["within_rtol"]
    return None if within is None else f"{'<=' if within else '>'} {r.rtol:g}"


def table(c: Comparison, title: bool = True) -> str:
    """The variants of one model within WIDTH columns: flash, RAM, stack, instructions, est. cycles
    and their ratios to lto; errors, clones, MACs and all-args vs dims as lines below."""
    headers = ["variant", "result", "flash", "vs lto", "RAM", "stack", "insns", "est. cycles", "vs lto"]
    body = []
    for r in c.rows:
        dl = c.deltas(r, "lto")
        body.append([r.variant, r.status, r.flash, _fmt_delta(dl["flash"]), _num(r.ram), _num(r.stack),
                     _num(r.insns), _num(r.cycles), _fmt_delta(dl["cycles"])])
    out = github_table(body, headers, ("left", "left") + ("right",) * 7)
    notes = []
    err = _by_variant(c, _err)
    if err:
        on = f" on {c.checked_inputs} inputs" if c.checked_inputs > 1 else ""
        basis = f" (tolerance: {c.tolerance})" if c.tolerance else ""
        notes.append(f"rel err against {c.reference}{on}: {err}{basis}")
    clones = _by_variant(c, lambda r: None if r.clones is None else f"{r.clones} ({r.refused} refused)")
    if clones:
        notes.append(f"clones: {clones}")
    unroll = _by_variant(c, lambda r: None if r.clones is None else (str(r.unroll_threshold) if r.unroll_threshold
                                                                        else "LLVM's"))
    if unroll:
        notes.append(f"unroll threshold: {unroll}")
    only = _by_variant(c, lambda r: _ranges(r.shape_only) or None)
    if only:
        notes.append(f"calls specialized shape-only (measured faster as dims clones): {only}")
    if c.macs and any(c.per_mac(r) for r in c.rows):
        notes.append(f"{c.macs:,} MACs in dot/conv kernels; est. cycles/MAC: "
                     + ", ".join(f"{r.variant} {c.per_mac(r):.2f}" for r in c.rows if c.per_mac(r)))
    p = c.pair()
    if p["flash"] is not None:
        notes.append(f"all-args vs dims: flash {_fmt_delta(p['flash'])}"
                     + (f", est. cycles {_fmt_delta(p['cycles'])}" if p["cycles"] else ""))
    if notes:
        out += "\n\n" + "\n".join(_lines(n) for n in notes)
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
    ratios: dict[str, list[float]] = {k: [] for k in ("flash", "ram", "cycles")}
    for c in comparisons:
        r = c.row(variant)
        if r is None:
            continue
        d = c.deltas(r, baseline)
        for k, values in ratios.items():
            if d[k]:
                values.append(d[k].ratio)
    out = {}
    for k, values in ratios.items():
        g = geomean(values)
        out[k] = None if g is None else round(g, 4)
    return out | {"models": len(ratios["flash"])}


def summary(comparisons: list[Comparison], variants: tuple[str, ...]) -> tuple[str, dict]:
    """Geometric means over models of each variant's flash, RAM and cycle ratios to `separate` and
    to `lto`, and of all-args' ratios to dims. Headers 'X/Y': the mean of X(variant) / X(Y)."""

    def fmt(v):
        return "-" if v is None else f"{v:.3f}x"

    data, body = {}, []
    for v in variants:
        by = {b: _geo(comparisons, v, b) for b in BASELINES}
        data[v] = {f"vs_{b}": by[b] for b in BASELINES}
        body.append([v, fmt(by["separate"]["flash"]), fmt(by["lto"]["flash"]), fmt(by["lto"]["ram"]),
                     fmt(by["separate"]["cycles"]), fmt(by["lto"]["cycles"]), by["separate"]["models"]])
    if PAIR[0] in variants and PAIR[1] in variants:
        g = _geo(comparisons, *PAIR)
        data["all_args_vs_dims"] = g
        body.append([f"{PAIR[0]} vs {PAIR[1]}", fmt(g["flash"]), "", fmt(g["ram"]), fmt(g["cycles"]), "",
                     g["models"]])
    text = github_table(body, ["variant", "flash/separate", "flash/lto", "RAM/lto", "cycles/separate", "cycles/lto",
                            "models"], ("left",) + ("right",) * 6)
    return text + "\n", data


def per_mac_table(comparisons: list[Comparison], variants: tuple[str, ...]) -> str:
    """est. cycles/MAC of every model with dot/conv kernels, one column per variant."""
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
    return github_table(body, ["model", "MACs", *variants], ("left",) + ("right",) * (len(variants) + 1)) + "\n"
