"""`specialize diff`: two comparison reports, per model and variant, metric by metric.

Reads reports in the format `scripts/benchmark.py` writes (reports/variants.json: a dict with a
"models" list of `report.Comparison.as_dict()`), or what `specialize --json` prints (one such
comparison, or a list of them). Prints the change of every metric both reports have, flags
regressions over `--fail-on` thresholds, lists models and variants only one report has.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from specializer.errors import UserError


@dataclass(frozen=True)
class Metric:
    name: str  # used in --fail-on
    header: str  # column title
    keys: tuple[str, ...]  # row fields that hold it; the first both reports have is compared


# Data-driven: a metric a report lacks shows as n/a and is never a regression.
METRICS = (
    Metric("flash", "flash", ("flash", "size")),
    Metric("ram", "RAM", ("ram",)),
    Metric("insns", "instructions", ("insns",)),
    Metric("cycles", "est. cycles", ("cycles",)),
)
_BY_NAME = {m.name: m for m in METRICS}

FAIL_ON_HELP = (
    "comma-separated METRIC:+LIMIT, where METRIC is one of " + ", ".join(_BY_NAME)
    + " and LIMIT is a percentage ('cycles:+2%%': fail when est. cycles grow by more than 2%%) "
    "or an absolute amount in the metric's unit ('flash:+256': more than 256 bytes more). "
    "Example: --fail-on cycles:+2%%,flash:+1%%,ram:+1%%"
)

_THRESHOLD = re.compile(r"^([a-z_-]+):\+?(\d+(?:\.\d*)?|\.\d+)(%?)$")


@dataclass(frozen=True)
class Threshold:
    metric: str
    limit: float
    percent: bool

    def exceeded(self, base: float, new: float) -> bool:
        grow = new - base
        if grow <= 0:
            return False
        if not self.percent:
            return grow > self.limit
        if base == 0:
            return True
        return grow / base * 100 > self.limit

    def __str__(self) -> str:
        return f"{self.metric}:+{self.limit:g}{'%' if self.percent else ''}"


def parse_fail_on(text: str) -> tuple[Threshold, ...]:
    """'cycles:+2%,flash:+1%' -> thresholds; UserError (one line) on bad syntax."""
    out = []
    for item in text.split(","):
        item = item.strip()
        m = _THRESHOLD.match(item)
        if not m:
            raise UserError(f"--fail-on: bad item '{item}': expected METRIC:+LIMIT[%], e.g. cycles:+2% "
                            f"(metrics: {', '.join(_BY_NAME)})")
        if m.group(1) not in _BY_NAME:
            raise UserError(f"--fail-on: unknown metric '{m.group(1)}' in '{item}' (have: {', '.join(_BY_NAME)})")
        out.append(Threshold(m.group(1), float(m.group(2)), m.group(3) == "%"))
    return tuple(out)


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Entry:
    status: str  # pass | FAIL | not run | error (the model did not build)
    values: dict  # row field (every Metric.keys) -> number or None


@dataclass(frozen=True)
class Report:
    path: Path
    models: dict  # model -> {variant -> Entry}, in report order
    keys: frozenset  # row fields (of Metric.keys) any row of the report has

    def has(self, m: Metric) -> bool:
        return any(k in self.keys for k in m.keys)


def load(path: Path) -> Report:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file (a report written by scripts/benchmark.py or 'specialize --json')")
    try:
        data = json.loads(path.read_text())
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a text file") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
    comps, failed = _comparisons(data, path)
    models: dict = {}
    present: set = set()
    for c in comps:
        name = c["model"]
        rows = models.setdefault(name, {})
        for r in c["variants"]:
            if not isinstance(r, dict) or "variant" not in r:
                raise UserError(f"{path}: model '{name}': a variant row without 'variant'")
            values = {}
            for k in (k for m in METRICS for k in m.keys):
                present.update([k] if k in r else [])
                v = r.get(k)
                values[k] = v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
            rows[r["variant"]] = Entry(str(r.get("status", "?")), values)
    for name in failed:
        models.setdefault(name, {})
    return Report(path, models, frozenset(present))


def _comparisons(data, path: Path) -> tuple[list, list]:
    """The comparison dicts of a report, and the models it failed to build."""
    failed: list = []
    if isinstance(data, dict) and "models" in data:
        comps = data["models"]
        failed = sorted((data.get("failed") or {}).keys())
    elif isinstance(data, dict) and "variants" in data:
        comps = [data]
    elif isinstance(data, list):
        comps = data
    else:
        raise UserError(f"{path}: not a variants report (expected a 'models' list, as in reports/variants.json)")
    for c in comps:
        if not (isinstance(c, dict) and isinstance(c.get("model"), str) and isinstance(c.get("variants"), list)):
            raise UserError(f"{path}: not a variants report (a model entry lacks 'model' or 'variants')")
    return comps, failed


# --------------------------------------------------------------------------- comparing


@dataclass(frozen=True)
class Change:
    metric: str
    base: float | None
    new: float | None

    @property
    def percent(self) -> float | None:
        if self.base is None or self.new is None:
            return None
        if self.base == 0:
            return 0.0 if self.new == 0 else math.inf
        return (self.new - self.base) / self.base * 100


@dataclass(frozen=True)
class RowDiff:
    model: str
    variant: str
    base_status: str
    new_status: str
    changes: tuple[Change, ...]
    regressions: tuple[str, ...] = ()  # why this row fails, one phrase each


@dataclass(frozen=True)
class Diff:
    base: Report
    new: Report
    rows: tuple[RowDiff, ...]
    added: tuple[str, ...]  # "model" or "model/variant" only NEW has
    removed: tuple[str, ...]  # ... only BASE has
    thresholds: tuple[Threshold, ...]
    unchecked: tuple[str, ...] = field(default=())  # thresholds on metrics a report lacks

    @property
    def regressed(self) -> bool:
        return any(r.regressions for r in self.rows)


def _ok(status: str) -> bool:
    return status in ("pass", "not run")


def compare_reports(base: Report, new: Report, thresholds: tuple[Threshold, ...] = ()) -> Diff:
    # per metric, the first field both reports have: a renamed or redefined metric (size -> flash)
    # is compared like for like, never one report's old field against the other's new one
    keys = {m.name: next((k for k in m.keys if k in base.keys and k in new.keys), None) for m in METRICS}
    rows, added, removed = [], [], []
    for model, bv in base.models.items():
        if model not in new.models:
            removed.append(model)
            continue
        nv = new.models[model]
        if not nv and bv:  # the model failed to build in NEW
            rows.append(RowDiff(model, "-", "pass", "error", (), ("the model did not build",)))
            continue
        for variant, b in bv.items():
            if variant not in nv:
                removed.append(f"{model}/{variant}")
                continue
            rows.append(_row(model, variant, b, nv[variant], thresholds, keys))
        added += [f"{model}/{v}" for v in nv if v not in bv]
    added += [m for m in new.models if m not in base.models]
    unchecked = tuple(str(t) for t in thresholds
                      if not (base.has(_BY_NAME[t.metric]) and new.has(_BY_NAME[t.metric])))
    return Diff(base, new, tuple(rows), tuple(added), tuple(removed), thresholds, unchecked)


def _row(model: str, variant: str, b: Entry, n: Entry, thresholds, keys: dict) -> RowDiff:
    changes = tuple(Change(m.name, b.values.get(keys[m.name]), n.values.get(keys[m.name])) for m in METRICS)
    why = []
    if _ok(b.status) and not _ok(n.status):
        why.append(f"result {b.status} -> {n.status}")
    by = {c.metric: c for c in changes}
    for t in thresholds:
        c = by[t.metric]
        if c.base is not None and c.new is not None and t.exceeded(c.base, c.new):
            why.append(f"{t.metric} {_fmt_num(c.base)} -> {_fmt_num(c.new)} ({_fmt_pct(c.percent)}) over {t}")
    return RowDiff(model, variant, b.status, n.status, changes, tuple(why))


# --------------------------------------------------------------------------- output


def _fmt_num(v: float) -> str:
    return f"{v:,}" if isinstance(v, int) else f"{v:,.4g}"


def _fmt_pct(p: float | None) -> str:
    if p is None:
        return "n/a"
    if math.isinf(p):
        return "+inf%"
    return f"{p:+.2f}%"


def _cell(c: Change) -> str:
    if c.base is None and c.new is None:
        return "n/a"
    if c.base is None or c.new is None:
        return "n/a (" + ("new" if c.base is None else "gone") + ")"
    if c.new == c.base:
        return "="
    return _fmt_pct(c.percent)


def _status(r: RowDiff) -> str:
    return r.new_status if r.base_status == r.new_status else f"{r.base_status}->{r.new_status}"


def _table(d: Diff, fmt: str) -> str:
    from tabulate import tabulate

    flag = d.regressed  # the verdict column only when something regressed
    headers = ["model", "variant", "result", *(m.header for m in METRICS)] + (["verdict"] if flag else [])
    body = [[r.model, r.variant, _status(r), *(_cell(c) for c in r.changes)]
            + (["REGRESSED" if r.regressions else ""] if flag else []) for r in d.rows]
    return tabulate(body, headers=headers, tablefmt="github" if fmt == "md" else "simple", disable_numparse=True,
                    colalign=("left", "left", "left") + ("right",) * len(METRICS) + (("left",) if flag else ()))


def render(d: Diff, fmt: str = "text") -> str:
    """The diff as a plain-text table (fits 100 columns for the bundled models) or Markdown."""
    md = fmt == "md"
    code = (lambda s: f"`{s}`") if md else (lambda s: s)
    out = []
    if md:
        out += [f"### specialize diff: {code(d.base.path.name)} -> {code(d.new.path.name)}", ""]
    else:
        out += [f"base: {d.base.path}", f"new:  {d.new.path}", ""]
    out += ["Change of each metric, NEW against BASE ('=' unchanged; n/a: a report lacks it).", ""]
    out += [_table(d, fmt) if d.rows else "(no model and variant in both reports)", ""]
    bad = [r for r in d.rows if r.regressions]
    if d.thresholds:
        limits = ", ".join(code(str(t)) for t in d.thresholds)
        out.append(f"**{len(bad)} regression(s)** over {limits}:" if md and bad
                   else f"{len(bad)} regression(s) over {limits}" + (":" if bad else "."))
    elif bad:
        out.append(f"{len(bad)} regression(s):")
    for r in bad:
        out.append(f"- {r.model}/{r.variant}: " + "; ".join(r.regressions))
    if d.unchecked:
        out.append(f"not checked (a report lacks the metric): {', '.join(d.unchecked)}")
    if d.added:
        out.append("only in NEW: " + ", ".join(code(a) for a in d.added))
    if d.removed:
        out.append("only in BASE: " + ", ".join(code(r) for r in d.removed))
    return "\n".join(out).rstrip("\n") + "\n"


def as_dict(d: Diff) -> dict:
    return {
        "base": str(d.base.path), "new": str(d.new.path),
        "thresholds": [str(t) for t in d.thresholds], "unchecked": list(d.unchecked),
        "regressed": d.regressed, "added": list(d.added), "removed": list(d.removed),
        "rows": [{"model": r.model, "variant": r.variant, "base_status": r.base_status, "new_status": r.new_status,
                  "metrics": {c.metric: {"base": c.base, "new": c.new,
                                         "percent": None if c.percent is None or math.isinf(c.percent)
                                         else round(c.percent, 4)} for c in r.changes},
                  "regressions": list(r.regressions)} for r in d.rows],
    }
