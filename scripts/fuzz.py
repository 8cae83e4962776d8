#!/usr/bin/env python3
"""Differential testing over many seeds: random JAX programs (specializer/fuzz.py) captured and
run in every variant on QEMU against JAX; prints one line per seed that did not pass and a summary.

    .venv/bin/python scripts/fuzz.py [--seeds 0:1000] [-o out/fuzz]
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
from pathlib import Path

from specializer import fuzz
from specializer.tools import repo_root


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="0:100", help="FIRST:END (default 0:100)")
    p.add_argument("-o", "--output", default=str(repo_root() / "out" / "fuzz"))
    p.add_argument("--keep", action="store_true", help="keep every seed's directory (default: only failures)")
    a = p.parse_args(argv)
    first, end = (int(x) for x in a.seeds.split(":"))
    counts = collections.Counter()
    for seed in range(first, end):
        work = Path(a.output) / str(seed)
        o = fuzz.check(seed, work)
        counts[o.status] += 1
        if o.status != "pass":
            print(f"seed {seed}: {o.status}: {o.detail}", flush=True)
        elif not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    n = end - first
    print(f"{n} programs: " + ", ".join(f"{k} {v} ({100 * v / n:.1f}%)" for k, v in sorted(counts.items())))
    return 1 if counts["mismatch"] else 0


if __name__ == "__main__":
    sys.exit(main())
