"""Argument types the commands share (clone budget, call lists, unroll threshold, byte counts,
output directories), and their progress lines."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path



def output_dir(text: str) -> str:
    """An `-o DIR` argument: a directory, or a path one can be made at. Checked when the command
    line is read, before anything is written, so a bad one is one line and leaves nothing behind."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: exists and is not a directory")
    base = next((a for a in path.absolute().parents if a.exists()), None) if not path.exists() else path
    if base is not None and not base.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {base} is not a directory")
    if base is not None and not os.access(base, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{text}: {base} is not writable")
    return text


def check_output_dir(p: argparse.ArgumentParser, text: str | None) -> None:
    """output_dir for an -o that is a directory only in some uses (specialize's comparison)."""
    if text is not None:
        try:
            output_dir(text)
        except argparse.ArgumentTypeError as e:
            p.error(f"argument -o/--output: {e}")


def growth(text: str) -> float | None:
    if text.lower() in ("none", "off", "inf"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: '{text}'") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def calls(text: str) -> frozenset:
    from specializer.optimize import callsites

    try:
        return callsites.parse_set(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not call numbers joined by '+' (e.g. 3+7+11): '{text}'") from None


def unroll_threshold(text: str) -> tuple:
    from specializer.optimize.variants import unroll_setting

    try:
        return unroll_setting(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def byte_count(text: str) -> int | None:
    """A byte count: 4194304, 4096K, 4M (K and M are 1024-based); 'none' for no budget."""
    t = text.strip().lower()
    if t in ("none", "off", "inf"):
        return None
    scale = {"k": 1024, "kib": 1024, "m": 1024 * 1024, "mib": 1024 * 1024}
    unit = next((u for u in sorted(scale, key=len, reverse=True) if t.endswith(u)), None)
    try:
        value = float(t[: -len(unit)] if unit else t) * (scale[unit] if unit else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a byte count: '{text}' (e.g. 4194304, 512K, 4M)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return int(value)


def add_speed_options(p: argparse.ArgumentParser) -> None:
    """-j and --no-cache, as every command that runs comparisons takes them (specialize, benchmark.py)."""
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="builds at once (each variant at each unroll threshold; the per-call choice's rebuilds): "
                        "default SPECIALIZER_JOBS, else one per core; the result is the same for any N")
    p.add_argument("--no-cache", action="store_true",
                   help="build everything again: do not reuse the builds an earlier run kept in the build "
                        "directory (an unchanged build is reused by default; SPECIALIZER_BUILD_DIR)")


def progress_lines(prefix: str):
    """A progress callback: `prefix: text` on stderr in one write. Variants built in parallel
    processes share stderr; print's separate write of the newline let two lines run into one."""
    def say(text: str) -> None:
        sys.stderr.write(f"{prefix}: {text}\n")
        sys.stderr.flush()
    return say
