"""Where a command's wall time goes: phases timed as they run (LLVM's -time-passes, for the tool).

    with timing.recording() as rec:          # the command: one recorder while it runs
        ...
        with timing.phase("codegen"):        # any stage: nothing happens when nobody records
            ...
    print(rec.table())                       # phase, calls, self seconds, share

A phase's self time is its wall time minus the phases run inside it (the specialize pass emits
objects to size its clones: that is codegen, not specialize), so the rows and "untimed" add up
to the command's wall time. Times never reach reports or build outputs: they differ run to run.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from dataclasses import dataclass, field

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("specializer_timing", default=None)
UNTIMED = "untimed"


@dataclass
class Recorder:
    seconds: dict = field(default_factory=dict)  # phase -> self seconds
    calls: dict = field(default_factory=dict)  # phase -> how many times it ran
    stack: list = field(default_factory=list)  # open phases: [name, seconds of phases inside]
    started: float = field(default_factory=time.perf_counter)
    total: float | None = None  # wall seconds, once recording ended

    def wall(self) -> float:
        return self.total if self.total is not None else time.perf_counter() - self.started

    def rows(self) -> list[tuple[str, int, float]]:
        """(phase, calls, self seconds), slowest first, then what no phase covered."""
        rows = sorted(((n, self.calls[n], s) for n, s in self.seconds.items()), key=lambda r: (-r[2], r[0]))
        return rows + [(UNTIMED, 0, max(self.wall() - sum(self.seconds.values()), 0.0))]

    def table(self) -> str:
        wall = self.wall() or 1e-9
        lines = [f"{'phase':<28} {'calls':>6} {'seconds':>9} {'%':>6}"]
        for name, calls, s in self.rows():
            lines.append(f"{name:<28} {calls or '':>6} {s:9.2f} {100 * s / wall:6.1f}")
        lines.append(f"{'total (wall)':<28} {'':>6} {wall:9.2f} {100.0:6.1f}")
        work = sum(self.seconds.values())
        if work > wall:  # builds ran side by side (parallel.py): % of the wall time, summing past 100
            lines.append(f"(builds ran side by side: {work:.2f} s of phases in {wall:.2f} s, {work / wall:.2f}x)")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return {"wall_seconds": round(self.wall(), 3),
                "phases": [{"phase": n, "calls": c, "seconds": round(s, 3)} for n, c, s in self.rows()]}


@contextlib.contextmanager
def phase(name: str):
    """Time the block as `name` when a recorder is active; else do nothing."""
    rec = _CURRENT.get()
    if rec is None:
        yield
        return
    start = time.perf_counter()
    rec.stack.append([name, 0.0])
    try:
        yield
    finally:
        elapsed = time.perf_counter() - start
        _, inside = rec.stack.pop()
        rec.seconds[name] = rec.seconds.get(name, 0.0) + elapsed - inside
        rec.calls[name] = rec.calls.get(name, 0) + 1
        if rec.stack:
            rec.stack[-1][1] += elapsed


def add(seconds: dict, calls: dict) -> None:
    """Phases timed elsewhere (a build run beside others in a child process: parallel.py) added to
    the active recorder. With several jobs the phases then add up to more than the wall time."""
    rec = _CURRENT.get()
    if rec is None:
        return
    for name, s in seconds.items():
        rec.seconds[name] = rec.seconds.get(name, 0.0) + s
        rec.calls[name] = rec.calls.get(name, 0) + calls.get(name, 0)


@contextlib.contextmanager
def recording():
    """A recorder for the phases run inside the block (this thread and its context)."""
    rec = Recorder()
    token = _CURRENT.set(rec)
    try:
        yield rec
    finally:
        rec.total = time.perf_counter() - rec.started
        _CURRENT.reset(token)
