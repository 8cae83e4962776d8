"""Measured builds kept in the build directory and reused when nothing that determines them changed.

A build of one variant, run on QEMU and profiled (measured.build_and_measure), is a function of:
the model (its IR, its manifest: inputs and reference outputs), the variant's pass pipeline with
the comparison's settings written in (pipeline.txt), the kernel library's bitcode and CMSIS-NN
kind, the target, how it is measured (method, timeout, profiles, diff text), and the tool itself
(cache.tool_digest: this package's files, LLVM; plus the firmware toolchain and QEMU). Their
digest names an entry: the build directory's files and the comparison's row. An unchanged rerun
copies them back; a changed setting misses only in the variants whose pipeline it is in.

Entries are published whole (cache.py); a build that failed or did not pass is never kept (its
error must show again). `specialize --no-cache` neither reads nor writes entries.
"""

from __future__ import annotations

import io
import pickle
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from specializer import cache
from specializer.inputs import Model
from specializer.errors import UserError
from specializer.optimize import pipeline, variants
from specializer.optimize.state import BuildContext
from specializer.report.tables import VariantRow
from specializer.tools import build_dir, find_tool

FORMAT = "1"  # the entry layout: bumped when it changes


@dataclass(frozen=True)
class Kept:
    """What an entry holds besides the files: enough to make the Candidate again."""
    row: VariantRow
    objects: tuple[str, ...]  # names in the build directory
    unroll_threshold: int | None
    shape_only: frozenset


_TOOLCHAIN: list[str] = []


def _toolchain() -> str:
    """The firmware linker's and QEMU's versions (they shape the ELF and the counts)."""
    if not _TOOLCHAIN:
        out = []
        for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
            # a version that cannot be read is an error, never a stand-in: a key made from a
            # stand-in would differ from run to run and keep no build
            try:
                r = subprocess.run([find_tool(tool), "--version"], capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                raise UserError(f"{tool} --version did not answer in 300 s") from None
            first = (r.stdout.splitlines() or [""])[0]
            if r.returncode != 0 or not first:
                raise UserError(f"{tool} --version failed (exit {r.returncode}): cannot key the build cache")
            out.append(first)
        _TOOLCHAIN.append("\n".join(out))
    return _TOOLCHAIN[0]


def key(model: Model, variant: str, options: variants.Options, context: BuildContext, **how) -> str:
    """The digest of everything that determines the measured build (`how`: method, timeout, ...)."""
    m = model.manifest
    steps = pipeline.to_text(variants.pipeline_for(variant, options))
    return cache.digest(
        FORMAT, cache.tool_digest(), _toolchain(), model.path.name, model.name, model.kind, model.text,
        "\n".join(model.entries), "\n".join(sorted(model.keep)), m.dumps() if m is not None else "",
        repr(sorted(model.shapes.items())), variant, steps, cache.file_digest(context.library.bitcode),
        context.cmsis_nn.kind,
        repr(context.target), repr(sorted(how.items())))


def _entry(k: str) -> Path:
    return build_dir() / "builds" / f"{k[:32]}.pickle"


def load(k: str, out_dir: Path) -> tuple[Kept, Path] | None:
    """The kept build `k` unpacked into `out_dir` (emptied first), or None."""
    entry = _entry(k)
    if not entry.is_file():
        return None
    kept, files = pickle.loads(entry.read_bytes())
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(files)) as tar:
        tar.extractall(out_dir, filter="data")
    return kept, out_dir


def store(k: str, out_dir: Path, kept: Kept) -> None:
    """Build directory `out_dir` and its row, kept as entry `k`."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for p in sorted(out_dir.rglob("*")):
            if p.is_file():
                info = tar.gettarinfo(str(p), arcname=str(p.relative_to(out_dir)))
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                with open(p, "rb") as f:
                    tar.addfile(info, f)
    cache.made(_entry(k), lambda tmp: tmp.write_bytes(pickle.dumps((kept, buf.getvalue()))))
