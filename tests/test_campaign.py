"""Campaigns on a Dask cluster started here on 127.0.0.1, or on local processes: the same results
(specializer/driver/campaign.py; scripts/fuzz.py --scheduler)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specializer.driver import campaign, fuzz
from specializer.errors import UserError

distributed = pytest.importorskip("distributed", reason="Dask's distributed package (the cluster extra) is absent")

FUZZ = [sys.executable, str(Path(__file__).parents[1] / "scripts" / "fuzz.py")]


@pytest.fixture(scope="module")
def scheduler():
    """A local cluster: a scheduler on 127.0.0.1 and two worker processes."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def test_tasks_give_the_same_results_on_the_cluster_and_locally(scheduler):
    seeds = list(range(12))
    here = dict(campaign.run(fuzz.program, seeds))
    pool = dict(campaign.run(fuzz.program, seeds, jobs=2))
    cluster = dict(campaign.run(fuzz.program, seeds, scheduler=scheduler))
    assert here == pool == cluster and sorted(cluster) == list(range(12))
    assert cluster[3] == fuzz.program(3)


def test_an_unreachable_scheduler_is_one_line():
    with pytest.raises(UserError, match="^cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        # 2 s: Dask retries a refused connection until the timeout (30 s by default)
        list(campaign.run(fuzz.program, [1], scheduler="tcp://127.0.0.1:9", connect_seconds=2))


@pytest.mark.slow
def test_fuzz_campaign_on_the_cluster_logs_what_a_local_run_logs(scheduler, tmp_path):
    """Two random programs captured and run in every variant on QEMU by the cluster's workers,
    then locally: the same log lines and summary; run again, nothing is redone (resumable)."""
    args = ["--seeds", "40:42", "--batch", "1"]
    on = subprocess.run([*FUZZ, *args, "--scheduler", scheduler, "-o", tmp_path / "cluster"],
                        capture_output=True, text=True)
    here = subprocess.run([*FUZZ, *args, "-o", tmp_path / "local"], capture_output=True, text=True)
    assert on.returncode == here.returncode == 0, on.stderr + here.stderr
    rows = lambda d: sorted(map(json.loads, (tmp_path / d / "fuzz.jsonl").read_text().splitlines()),  # noqa: E731
                            key=lambda r: r["seed"])
    assert rows("cluster") == rows("local") and len(rows("local")) == 2
    assert on.stdout == here.stdout and "2 programs" in on.stdout
    again = subprocess.run([*FUZZ, *args, "--scheduler", scheduler, "-o", tmp_path / "cluster"],
                           capture_output=True, text=True)
    assert again.returncode == 0 and "0 programs to run" not in again.stderr and again.stdout == on.stdout
    assert rows("cluster") == rows("local")  # nothing appended: every seed was already logged


@pytest.mark.slow
def test_benchmark_on_the_cluster_writes_the_reports_of_a_local_run(scheduler, tmp_path):
    bench = [sys.executable, str(Path(__file__).parents[1] / "scripts" / "benchmark.py"), "quadratic", "softmax",
             "--unroll-threshold", "llvm", "--no-cache"]
    on = subprocess.run([*bench, "--scheduler", scheduler, "-o", tmp_path / "o1", "--reports", tmp_path / "r1"],
                        capture_output=True, text=True)
    here = subprocess.run([*bench, "-o", tmp_path / "o2", "--reports", tmp_path / "r2"], capture_output=True, text=True)
    assert on.returncode == here.returncode == 0, on.stderr + here.stderr
    files = lambda d: {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}  # noqa: E731
    assert files(tmp_path / "r1") == files(tmp_path / "r2") and "variants.json" in files(tmp_path / "r1")
