"""A float model's tolerance, from what float32 arithmetic costs its program.

Outputs are judged per element: |got - ref| <= rtol * max(|ref|, atol), ref being JAX's float32
outputs (run/measure.py). A correct build differs from them by its own rounding and libm, which
for a plain network stay far inside the default 1e-5; a chain of logs, divisions and powers grows
an ulp or two into more. The float32 reference's own error against the same program run in
float64 (float64_run.py) measures that growth for this program and these inputs: a correct build's
error against exact arithmetic is of the same size, and the two may lie on opposite sides, so the
tolerance is MARGIN times it, never below the default, rounded up to 1, 2 or 5 times a power of
ten (the reference's digits vary a little with the host CPU; the step keeps the tolerance put).
"""

from __future__ import annotations

import math

import numpy as np

DEFAULT_RTOL = 1e-5
MARGIN = 4.0


def float32_error(outs32: list[np.ndarray], outs64: list[np.ndarray], atol: float) -> float:
    """Largest |ref32 - ref64| / max(|ref64|, atol) over the float outputs' finite elements."""
    worst = 0.0
    for a, b in zip(outs32, outs64):
        a = np.asarray(a)
        if a.dtype.kind != "f":
            continue
        a64, b64 = a.astype(np.float64), np.asarray(b, dtype=np.float64)
        if a64.shape != b64.shape:
            continue
        both = np.isfinite(a64) & np.isfinite(b64)
        if both.any():
            rel = np.abs(a64[both] - b64[both]) / np.maximum(np.abs(b64[both]), atol)
            worst = max(worst, float(rel.max()))
    return worst


def _step_up(x: float) -> float:
    """The least of 1, 2, 5 times a power of ten that is >= x."""
    power = 10.0 ** math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * power >= x * (1 - 1e-12):
            return float(f"{m * power:.0e}")
    return 10 * power


def derive(outs32: list[np.ndarray], outs64: list[np.ndarray] | None, atol: float,
           why_not: str = "") -> tuple[float, str]:
    """(rtol, basis): the tolerance and, when it is not the default, what it rests on."""
    if outs64 is None:
        return DEFAULT_RTOL, f"default (no float64 run: {why_not})" if why_not else ""
    err = float32_error(outs32, outs64, atol)
    if MARGIN * err <= DEFAULT_RTOL:
        return DEFAULT_RTOL, ""
    # no digits of the error itself: they vary with the host CPU that computed the reference
    return _step_up(MARGIN * err), f"{MARGIN:g}x the float32 reference's own error against a float64 run"
