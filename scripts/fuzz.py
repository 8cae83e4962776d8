#!/usr/bin/env python3
"""Differential testing over many seeds: random JAX programs (specializer/driver/fuzz.py) captured and
run in every variant on QEMU against op-by-op JAX; one line per program that did not pass, then
a summary (pass / refused at capture, grouped by the refusal / mismatch / error / xla-differs).

    .venv/bin/python scripts/fuzz.py [--seeds 0:1000] [--batch 8] [--jobs 1 | --scheduler tcp://HOST:PORT] [-o out/fuzz]

Programs are captured `--batch` at a time as one function (each program's outputs are its own,
so results stay per program; see fuzz.check). Batches alternate the specializing variants'
unroll threshold between LLVM's and 1000 (the two `auto` measures). Every result is appended to
OUT/fuzz.jsonl as it comes; a run that is interrupted resumes there: seeds already logged are
not run again.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import sys
import time
from pathlib import Path

from specializer.driver import campaign, fuzz
from specializer.errors import UserError
from specializer.tools import repo_root

THRESHOLDS = (None, 1000)


def _batch(args: tuple[list[int], str, int | None, bool]) -> list[dict]:
    seeds, out, threshold, keep = args
    work = Path(out) / f"b{seeds[0]}"
    shutil.rmtree(work, ignore_errors=True)
    t = time.monotonic()
    res = fuzz.check(seeds, work, unroll_threshold=threshold)
    secs = round((time.monotonic() - t) / len(seeds), 1)
    if keep is False and all(o.status == "pass" for o in res.values()):
        shutil.rmtree(work, ignore_errors=True)
    print(f"batch {seeds[0]}-{seeds[-1]}: {secs} s per program", file=sys.stderr, flush=True)
    return [dict(seed=s, status=o.status, detail=o.detail, batch=seeds[0], unroll=threshold or "llvm")
            for s, o in res.items()]


def group(detail: str) -> str:
    """A refusal line without what names one program (paths, instruction names, shapes)."""
    text = re.sub(r"capture of \S+ failed", "capture failed", detail)
    text = re.sub(r" '[^']*'", "", text)
    return re.sub(r" \([^()]*\[[^()]*\)", "", text)  # shapes: f32[1,4,8,2]{3,2,1,0} ...


def summary(results: list[dict]) -> str:
    n = len(results)
    counts = collections.Counter(r["status"] for r in results)
    lines = [f"{n} programs: " + ", ".join(f"{k} {v} ({100 * v / n:.1f}%)" for k, v in sorted(counts.items()))]
    refusals = collections.defaultdict(list)
    for r in results:
        if r["status"] == "refused":
            refusals[group(r["detail"])].append(r["seed"])
    for line, seeds in sorted(refusals.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"  refused {len(seeds)}: {line}  (seeds {', '.join(map(str, seeds))})")
    for status in ("mismatch", "error", "xla-differs"):
        seeds = [r["seed"] for r in results if r["status"] == status]
        if seeds:
            lines.append(f"  {status} seeds: {', '.join(map(str, seeds))}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", default="0:100", help="FIRST:END, or seeds separated by commas (default 0:100)")
    p.add_argument("--batch", type=int, default=8, help="programs captured as one function (default 8)")
    p.add_argument("--jobs", type=int, default=1, help="batches run at once (default 1)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run the batches on this Dask cluster (its workers share -o's file system) instead of "
                        "--jobs local processes; the same results")
    p.add_argument("-o", "--output", default=str(repo_root() / "out" / "fuzz"))
    p.add_argument("--keep", action="store_true", help="keep every batch's directory (default: only failures)")
    a = p.parse_args(argv)
    try:
        if ":" in a.seeds:
            first, end = (int(x) for x in a.seeds.split(":"))
            seeds = list(range(first, end))
        else:
            seeds = sorted({int(x) for x in a.seeds.replace(",", " ").split()})
        if not seeds or seeds[0] < 0 or a.batch < 1 or a.jobs < 1:
            raise ValueError
    except ValueError:
        print(f"fuzz.py: error: --seeds wants FIRST:END with 0 <= FIRST < END or a list of seeds "
              f"(got '{a.seeds}'), --batch and --jobs at least 1", file=sys.stderr)
        return 2
    out = Path(a.output)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "fuzz.jsonl"
    done = {}
    if log.exists():
        for line in log.read_text().splitlines():
            try:
                r = json.loads(line)
                done[r["seed"]] = r
            except (json.JSONDecodeError, KeyError, TypeError):
                continue  # a line cut short by an interrupted run: that seed runs again
    todo = [s for s in seeds if s not in done]
    batches = [todo[i:i + a.batch] for i in range(0, len(todo), a.batch)]
    jobs = [(b, str(out), THRESHOLDS[i % 2], a.keep) for i, b in enumerate(batches)]
    if todo:
        print(f"{len(todo)} programs to run ({len(seeds) - len(todo)} already in {log})", file=sys.stderr, flush=True)
    try:
        _run_batches(jobs, a, log, done)
    except UserError as e:
        print(f"fuzz.py: error: {e}", file=sys.stderr)
        return 2
    results = [done[s] for s in seeds]
    print(summary(results))
    return 1 if any(r["status"] in ("mismatch", "error") for r in results) else 0


def _run_batches(jobs: list, a, log: Path, done: dict) -> None:
    """Every batch, here, on local processes or on the cluster; each result logged as it comes."""
    with log.open("a") as f:
        for _, rows in campaign.run(_batch, jobs, scheduler=a.scheduler, jobs=a.jobs):
            for r in rows:
                f.write(json.dumps(r, sort_keys=True) + "\n")
                done[r["seed"]] = r
                if r["status"] != "pass":
                    print(f"seed {r['seed']}: {r['status']}: {r['detail']}", flush=True)
            f.flush()


if __name__ == "__main__":
    sys.exit(main())
