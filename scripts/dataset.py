#!/usr/bin/env python3
"""The paired Python -> IR -> cycles dataset: generated programs, every stage and every variant's
measurement, as Parquet shards (specializer/driver/dataset.py; schema: docs/dataset.md).

    .venv/bin/python scripts/dataset.py [--seeds 0:1000] [--shard-size 50] [--jobs 1 | --scheduler tcp://HOST:PORT] [-o out/dataset]

Shard k holds seeds FIRST + k*SIZE .. (each program's five variant rows, in seed order), named
programs-<first>-<last>.parquet. A shard already written is skipped, so an interrupted run
resumes; the same seeds give byte-identical shards. Programs run in this process (--jobs 1),
on local processes, or on a Dask cluster's workers (--scheduler: they share -o's file system).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from specializer.driver import campaign, dataset
from specializer.errors import UserError
from specializer.tools import repo_root


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="0:1000", help="FIRST:END (default 0:1000)")
    p.add_argument("--shard-size", type=int, default=50, metavar="N", help="programs per Parquet file (default 50)")
    p.add_argument("--jobs", type=int, default=1, help="programs at once on local processes (default 1)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run the programs on this Dask cluster")
    p.add_argument("-o", "--output", default=str(repo_root() / "out" / "dataset"))
    a = p.parse_args(argv)
    try:
        first, end = (int(x) for x in a.seeds.split(":"))
        if not 0 <= first < end or a.shard_size < 1 or a.jobs < 1:
            raise ValueError
    except ValueError:
        print(f"dataset.py: error: --seeds wants FIRST:END with 0 <= FIRST < END (got '{a.seeds}'), "
              "--shard-size and --jobs at least 1", file=sys.stderr)
        return 2
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        print("dataset.py: error: the dataset is written with pyarrow: pip install 'specializer[dataset]'",
              file=sys.stderr)
        return 2
    out = Path(a.output)
    out.mkdir(parents=True, exist_ok=True)
    shards = {}
    for lo in range(first, end, a.shard_size):
        seeds = list(range(lo, min(lo + a.shard_size, end)))
        path = out / f"programs-{seeds[0]:06d}-{seeds[-1]:06d}.parquet"
        if not path.exists():
            shards[path] = seeds
    todo = [s for seeds in shards.values() for s in seeds]
    print(f"{len(todo)} programs in {len(shards)} shards to write ({(end - first) - len(todo)} already in {out})",
          file=sys.stderr, flush=True)
    work = out / ".work"
    rows: dict[int, list[dict]] = {}
    start = time.monotonic()
    try:
        for i, r in campaign.run(dataset.program_task, [(s, str(work)) for s in todo],
                                 scheduler=a.scheduler, jobs=a.jobs):
            rows[todo[i]] = r
            for path, seeds in list(shards.items()):  # a shard is written once all its programs are in
                if all(s in rows for s in seeds):
                    dataset.write_shard([row for s in seeds for row in rows.pop(s)], path)
                    del shards[path]
                    print(f"wrote {path.name} ({time.monotonic() - start:.0f} s)", file=sys.stderr, flush=True)
    except UserError as e:
        print(f"dataset.py: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
