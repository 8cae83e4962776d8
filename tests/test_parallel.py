"""Builds side by side (parallel.py, `specialize -j N`): the same values, files and first error
as one after another (a comparison with -j 3 and -j 1, byte for byte: test_reproducible_builds.py)."""

from __future__ import annotations

import os
import time

import pytest

from specializer import parallel, timing
from specializer.errors import UserError


def _step(tmp_path, i: int, fail: bool = False):
    def run():
        time.sleep(0.05 * (3 - i % 3))  # finish out of order
        with timing.phase("work"):
            (tmp_path / f"ran{i}").write_text(str(os.getpid()))
        if fail:
            raise UserError(f"step {i} failed")
        return {"i": i, "square": i * i}
    return run


@pytest.mark.parametrize("jobs", [1, 2, 4])
def test_values_in_order_whatever_finishes_first(tmp_path, jobs):
    with timing.recording() as rec:
        got = parallel.run_all([_step(tmp_path, i) for i in range(6)], jobs)
    assert got == [{"i": i, "square": i * i} for i in range(6)]
    pids = {(tmp_path / f"ran{i}").read_text() for i in range(6)}
    assert (pids == {str(os.getpid())}) == (jobs == 1)  # in this process only with one job
    assert rec.calls["work"] == 6  # the children's phases reach the recorder


def test_the_first_error_in_order_once_every_step_ended(tmp_path):
    steps = [_step(tmp_path, 0), _step(tmp_path, 1, fail=True), _step(tmp_path, 2, fail=True), _step(tmp_path, 3)]
    with pytest.raises(UserError, match="^step 1 failed$"):
        parallel.run_all(steps, 3)
    assert all((tmp_path / f"ran{i}").exists() for i in range(4))


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_step_gets_its_dependencies_values_and_starts_once_they_ended(tmp_path, jobs):
    """run_graph: step 2 needs steps 0 and 1 and gets their values; with two jobs it starts as
    soon as both have ended and is done before the long step 3 (which started beside step 1)."""
    def stamped(name, value, wait=0.0):
        def run(*deps):
            time.sleep(wait)
            (tmp_path / name).write_text(str(time.monotonic()))
            return value + sum(deps)
        return run

    steps = [((), stamped("a", 1, 0.1)), ((), stamped("b", 10, 0.2)), ((0, 1), stamped("c", 100)),
             ((), stamped("d", 1000, 0.3))]
    assert parallel.run_graph(steps, jobs) == [1, 10, 111, 1000]
    started = {n: float((tmp_path / n).read_text()) for n in "abcd"}
    assert started["c"] > max(started["a"], started["b"])
    assert started["c"] < started["d"]


def test_a_step_whose_dependency_failed_does_not_run(tmp_path):
    steps = [((), _step(tmp_path, 0)), ((), _step(tmp_path, 1, fail=True)),
             ((1,), lambda value: (tmp_path / "after").write_text("ran")), ((), _step(tmp_path, 3))]
    with pytest.raises(UserError, match="^step 1 failed$"):
        parallel.run_graph(steps, 2)
    assert not (tmp_path / "after").exists() and (tmp_path / "ran3").exists()


def test_a_step_that_dies_is_one_line():
    def dies():
        os.kill(os.getpid(), 9)

    def other_error():
        raise KeyError("x")

    with pytest.raises(UserError, match="^a build running beside others died of signal 9$"):
        parallel.run_all([lambda: 1, dies], 2)
    with pytest.raises(UserError, match="^KeyError: 'x'$"):
        parallel.run_all([lambda: 1, other_error], 2)


def test_an_error_comes_back_with_its_type_and_fields():
    from specializer.run.qemu import Hang

    def hangs():
        raise Hang("model did not finish in 3 s", 3.0)

    with pytest.raises(Hang, match="did not finish") as e:
        parallel.run_all([lambda: 1, hangs], 2)
    assert e.value.seconds == 3.0


def _sleeper(pidfile):
    """Like qemu.run: a process in a session of its own, killed with its group on any exception."""
    import signal
    import subprocess

    def step():
        proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
        pidfile.write_text(str(proc.pid))
        try:
            proc.wait()
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    return step


def test_interrupted_no_child_nor_what_it_started_outlives_it(tmp_path):
    import signal

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.alarm(2)
    try:
        with pytest.raises(KeyboardInterrupt):
            parallel.run_all([_sleeper(tmp_path / "a"), _sleeper(tmp_path / "b")], 2)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    for name in ("a", "b"):
        pid = int((tmp_path / name).read_text())
        with pytest.raises(ProcessLookupError):  # the sleep the child started is gone too
            os.kill(pid, 0)


def test_default_jobs_from_the_environment_else_the_cores(monkeypatch):
    monkeypatch.setenv("SPECIALIZER_JOBS", "3")
    assert parallel.default_jobs() == 3
    cores = len(os.sched_getaffinity(0))
    for bad in ("0", "", "two", "-1"):  # not a positive count: one per core
        monkeypatch.setenv("SPECIALIZER_JOBS", bad)
        assert parallel.default_jobs() == cores
    monkeypatch.delenv("SPECIALIZER_JOBS")
    assert parallel.default_jobs() == cores
