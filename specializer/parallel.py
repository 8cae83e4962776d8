"""Independent steps run at once, each in a forked child; the results in the order given.

A comparison's builds (a variant at an unroll threshold, built, run on QEMU, profiled) share
nothing but their inputs and write each into its own directory, so they can run side by side
(`-j N`). A fork needs nothing pickled but the result (no re-import, the same loaded LLVM, as
llvm/isolate.py does for code generation); the parent gets, in the steps' order, each step's
value or its error, so the outcome -- files, report, the first error raised -- is what running
them one after another gives. With one job (or one step) the steps run in this process.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import tempfile
import time
import warnings
from typing import Callable, TypeVar

from specializer import timing
from specializer.errors import UserError

T = TypeVar("T")


def default_jobs() -> int:
    """How many steps at once when nobody says: SPECIALIZER_JOBS, else one per core this process
    may use."""
    given = os.environ.get("SPECIALIZER_JOBS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def run_all(steps: list[Callable[[], T]], jobs: int) -> list[T]:
    """Every step's value, in order; at most `jobs` running at a time. A step's error is raised
    once every step has ended (the first in order: as a sequential run would raise it)."""
    return run_graph([((), step) for step in steps], jobs)


def run_graph(steps: list[tuple[tuple[int, ...], Callable]], jobs: int) -> list:
    """Steps that need others' values: step i is (deps, fn), and fn(*the values of deps) runs once
    those have ended (deps are earlier steps). Of the steps ready, the earliest starts first; the
    values and the first error come back as from run_all. A step whose dependency failed does not
    run (its outcome is that error)."""
    assert all(d < i for i, (deps, _) in enumerate(steps) for d in deps), "a step needs a later one"
    outcomes: list = [None] * len(steps)

    def call(i: int):
        deps, fn = steps[i]
        return lambda: fn(*(outcomes[d][1] for d in deps))

    def failed_dep(i: int):
        return next(((False, outcomes[d][1], {}, {}) for d in steps[i][0] if not outcomes[d][0]), None)

    if jobs <= 1 or len(steps) <= 1:  # one after another: the first error ends it
        values: list = []
        for deps, fn in steps:
            values.append(fn(*(values[d] for d in deps)))
        return values
    running: dict[int, tuple[int, object]] = {}  # pid -> (step index, result file)
    pending = list(range(len(steps)))
    try:
        while pending or running:
            ready = [i for i in pending if all(outcomes[d] is not None for d in steps[i][0])]
            while ready and len(running) < jobs:
                i = ready.pop(0)
                pending.remove(i)
                if (failed := failed_dep(i)) is not None:
                    outcomes[i] = failed
                    continue
                out = tempfile.TemporaryFile()
                running[_start(call(i), out)] = (i, out)
            finished = 0
            for pid in list(running):  # only our children: a caller may have others (subprocess)
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    i, out = running.pop(pid)
                    outcomes[i] = _outcome(out, status)
                    finished += 1
            if not finished and (running or not ready):
                time.sleep(0.02)
    finally:
        _stop(running)
    return _values(outcomes)


def _values(outcomes: list) -> list:
    values = []
    for ok, value, seconds, calls in outcomes:
        timing.add(seconds, calls)
        if not ok:
            raise value
        values.append(value)
    return values


def _stop(running: dict) -> None:
    """Interrupted: no child outlives the comparison, nor what it started. SIGTERM first, so a
    child ends its QEMU run (qemu.run kills QEMU's process group on any exception; QEMU runs in a
    session of its own and would outlive a child killed outright), then SIGKILL what is left."""
    for pid in running:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + 10
    for pid in running:
        try:
            while not os.waitpid(pid, os.WNOHANG)[0]:
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    break
                time.sleep(0.02)
        except OSError:
            pass


def _terminated(signum, frame):
    raise SystemExit(128 + signum)  # unwinds: qemu.run kills its QEMU on the way out


def _start(step: Callable[[], T], out) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    with warnings.catch_warnings():  # forking a process with threads (one that imported JAX): see isolate.py
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        pid = os.fork()
    if pid:
        return pid
    code = 0
    try:  # the child: never returns into the parent's code
        signal.signal(signal.SIGTERM, _terminated)
        with timing.recording() as rec:
            try:
                result = (True, step())
            except UserError as e:  # the same error in the parent (errors.py pickles any subclass)
                result = (False, e)
            except BaseException as e:  # noqa: BLE001 - handed to the parent as one line
                result = (False, UserError(f"{type(e).__name__}: {e}"))
        pickle.dump((*result, rec.seconds, rec.calls), out)
        out.flush()
    except BaseException:  # noqa: BLE001 - the parent reports a child that left no result
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _outcome(out, status: int) -> tuple:
    out.seek(0)
    try:
        return pickle.load(out)
    except (EOFError, pickle.UnpicklingError):
        if os.WIFSIGNALED(status):
            why = f"died of signal {os.WTERMSIG(status)}"
        else:
            why = f"exited with status {os.WEXITSTATUS(status)} without a result"
        return False, UserError(f"a build running beside others {why}"), {}, {}
    finally:
        out.close()
