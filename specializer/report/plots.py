"""Plots of a variants report: per model, per layer, and over the zoo (PNG, byte-identical run to run).

Input is the report as scripts/benchmark.py writes it (reports/variants.json: "models", a list of
`report.Comparison.as_dict()`, and "summary") and, per model and variant, the per-function profile
(profile.json rows: name, est. cycles). Nothing is measured here.

* `<model>.png`: flash and est. cycles of each variant, side by side.
* `<model>-profile.png`: est. cycles of the functions that cost most, one bar per variant; a
  clone (`f.spec.1a2b3c4d`) counts as its callee `f`, so a variant's specialized kernels line up with
  the others' originals.
* `summary.png`: geometric means over the models of each variant's flash, RAM and est. cycles
  as a ratio to `lto`.

Deterministic: the Agg renderer, matplotlib's default style whatever matplotlibrc says, fixed
size and resolution, and no metadata (no software version, no date) in the PNG.
"""

from __future__ import annotations

import re
from pathlib import Path

from specializer.optimize.speclog import CLONE_SUFFIX

TOP_FUNCTIONS = 10  # functions shown per profile plot; the rest is one "other" bar
DPI = 100
# a clone's suffix (specialize.clone_name), and the numbered one reports made before it
_CLONE = re.compile(rf"({CLONE_SUFFIX}|__spec\d+)$")
# PNG text chunks matplotlib writes by default ("Software": its version); None leaves them out
METADATA = {"Software": None}


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path) -> Path:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata=METADATA)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    return path


def _style():
    import matplotlib

    # the defaults, not a user's matplotlibrc: the same bytes on every machine with these versions
    return matplotlib.rc_context({k: v for k, v in matplotlib.rcParamsDefault.items() if k != "backend"})


def _bars(ax, labels: list[str], values: list, title: str, unit: str) -> None:
    xs = range(len(labels))
    shown = [0 if v is None else v for v in values]
    bars = ax.bar(xs, shown, color=[f"C{i}" for i in xs])
    ax.set_xticks(list(xs), labels, rotation=30, ha="right")
    ax.set_title(title)
    ax.set_ylabel(unit)
    for b, v in zip(bars, values):
        ax.annotate("n/a" if v is None else f"{v:,}", (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center", va="bottom", fontsize=7)
    ax.margins(y=0.15)


def model_plot(comparison: dict, path: Path) -> Path:
    """Flash and est. cycles per variant of one model (a Comparison.as_dict())."""
    rows = comparison["variants"]
    labels = [r["variant"] + ("" if r["status"] in ("pass", "not run") else f" ({r['status']})") for r in rows]
    with _style():
        fig = _figure(9, 3.6)
        left, right = fig.subplots(1, 2)
        _bars(left, labels, [r.get("flash", r.get("size")) for r in rows], "flash", "bytes")
        _bars(right, labels, [r.get("cycles") for r in rows], "est. cycles", "cycles")
        fig.suptitle(comparison["model"])
        return _save(fig, path)


def _callee(name: str) -> str:
    return _CLONE.sub("", name)


def profile_plot(model: str, profiles: dict, path: Path, order: list[str] | None = None) -> Path | None:
    """est. cycles per function (clones summed into their callee), one bar per variant.

    `profiles`: variant -> profile.json rows ({"name", "cycles", ...}); bars in `order` (the
    report's variant order, so colours match the model plot), else in the order given. None
    when no variant has a profile (nothing ran)."""
    per: dict[str, dict[str, int]] = {}
    for variant in [v for v in (order or list(profiles)) if v in profiles]:
        acc = per.setdefault(variant, {})
        rows = profiles[variant]
        for r in rows:
            acc[_callee(r["name"])] = acc.get(_callee(r["name"]), 0) + int(r["cycles"])
    if not any(per.values()):
        return None
    # the functions that cost most in any variant, most first (ties by name)
    top = sorted({f for acc in per.values() for f in acc},
                 key=lambda f: (-max(acc.get(f, 0) for acc in per.values()), f))[:TOP_FUNCTIONS]
    names = top + (["other"] if any(f not in top for acc in per.values() for f in acc) else [])
    variants = list(per)
    height = 1.2 + 0.18 * len(names) * max(1, len(variants)) ** 0.5 + 0.25 * len(names)
    with _style():
        fig = _figure(9, height)
        ax = fig.subplots()
        width = 0.8 / max(1, len(variants))
        for j, v in enumerate(variants):
            acc = per[v]
            vals = [acc.get(f, 0) for f in top]
            if names[-1:] == ["other"]:
                vals.append(sum(c for f, c in acc.items() if f not in top))
            ys = [k + (j - (len(variants) - 1) / 2) * width for k in range(len(names))]
            colour = order.index(v) if order else j  # v's colour in the model plot
            ax.barh(ys, vals, height=width, label=v, color=f"C{colour}")
        ax.set_yticks(range(len(names)), names, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("est. cycles (clones counted as their callee)")
        ax.set_title(f"{model}: est. cycles per function")
        ax.legend(fontsize=7, loc="lower right")
        return _save(fig, path)


def summary_plot(summary: dict, variants: list[str], path: Path) -> Path:
    """Geometric means over the models of flash, RAM and est. cycles as a ratio to lto."""
    metrics = (("flash", "flash"), ("ram", "RAM"), ("cycles", "est. cycles"))
    shown = [v for v in variants if v in summary]
    with _style():
        fig = _figure(9, 3.8)
        ax = fig.subplots()
        width = 0.8 / len(metrics)
        for i, (key, label) in enumerate(metrics):
            vals = [summary[v]["vs_lto"].get(key) for v in shown]
            xs = [k + (i - 1) * width for k in range(len(shown))]
            bars = ax.bar(xs, [0 if x is None else x for x in vals], width=width, label=label, color=f"C{i}")
            for b, x in zip(bars, vals):
                ax.annotate("n/a" if x is None else f"{x:.3f}", (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=7)
        ax.axhline(1.0, color="0.3", linewidth=0.8)
        ax.set_xticks(range(len(shown)), shown)
        ax.set_ylabel("ratio to lto (geometric mean)")
        models = max((summary[v]["vs_lto"].get("models", 0) for v in shown), default=0)
        ax.set_title(f"every variant against lto, over {models} models (lower is better)")
        ax.legend(fontsize=8, loc="lower left")
        ax.margins(y=0.12)
        return _save(fig, path)


def write_all(report: dict, profiles: dict, out_dir: Path, variants: list[str]) -> list[Path]:
    """Every plot of a report into `out_dir`; the paths written, summary first.

    `profiles`: model -> variant -> profile.json rows (a model or variant may be missing)."""
    out = [summary_plot(report["summary"], variants, out_dir / "summary.png")]
    for c in report["models"]:
        out.append(model_plot(c, out_dir / f"{c['model']}.png"))
        p = profile_plot(c["model"], profiles.get(c["model"], {}), out_dir / f"{c['model']}-profile.png",
                         [r["variant"] for r in c["variants"]])
        if p:
            out.append(p)
    return out
