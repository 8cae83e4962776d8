"""A capture kept in its output directory and taken again when nothing that determines it changed.

The README's main job and CI's benchmark shards capture the same bundled models and model files
run after run; a capture is seconds to a minute of JAX and XLA. What determines one: the tool
(cache.tool_digest), the versions of what runs the reference (JAX, jaxlib, TFLite Micro, ONNX),
this machine's CPU (XLA compiles for it), the model file, the function, the capture's options,
and -- for a Python model -- every .py file beside it, since a bundled example imports its float
sibling. A model that imports code from anywhere else is not covered: this is for the bundled
examples and for model files (.tflite, .onnx), whose bytes are the whole model.

The key is written after capture's files and removed before a new capture starts, so a capture
that died half-way is never taken again.
"""

from __future__ import annotations

import importlib.metadata
import platform
from pathlib import Path

from specializer import cache, files
from specializer.capture import imported
from specializer.capture.capture import Captured, capture
from specializer.capture.manifest import Manifest

KEY = "capture.key"
_PACKAGES = ("jax", "jaxlib", "numpy", "tflite-micro", "onnx")


def _versions() -> list[str]:
    out = []
    for p in _PACKAGES:
        try:
            out.append(f"{p}={importlib.metadata.version(p)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{p}=-")
    return out


def _cpu() -> str:
    """The machine and the first CPU's model and flags (what XLA's host code generation sees)."""
    try:
        lines = Path("/proc/cpuinfo").read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    keep = [ln for ln in lines if ln.split(":")[0].strip() in ("model name", "flags", "Features")]
    return "\n".join([platform.machine(), *sorted(set(keep))])


def key(source: Path, function: str | None, examples: int) -> str:
    source = Path(source).resolve()
    parts: list[bytes | str] = [cache.tool_digest(), *_versions(), _cpu(), str(function), str(examples),
                                source.name, source.read_bytes()]
    if not imported.is_model_file(source):
        for f in sorted(source.parent.glob("*.py")):
            parts += [f.name, f.read_bytes()]
    return cache.digest(*parts)


def capture_again(source: Path, function: str | None, out_dir: Path, examples: int = 1,
                  reuse: bool = True) -> Captured:
    """capture(source, function, out_dir), or the one out_dir already holds from the same inputs
    (`reuse`; else capture and keep it for next time)."""
    out_dir = Path(out_dir)
    k = key(source, function, examples)
    stamp, ll, js = out_dir / KEY, out_dir / "model.ll", out_dir / "model.json"
    if reuse and stamp.is_file() and stamp.read_text() == k and ll.is_file() and js.is_file():
        log = out_dir / "capture.log"
        lines = tuple(ln[len("capture: "):] for ln in log.read_text().splitlines()) if log.is_file() else ()
        return Captured(ll, js, Manifest.load(js), lines)
    stamp.unlink(missing_ok=True)
    c = capture(source, function, out_dir, examples=examples)
    files.write(stamp, k)
    return c
