"""Capture workers forked from a warm process: Python and JAX started once per caller, not per capture.

A capture runs the user's JAX function in a process of its own (capture_worker: XLA reads its
flags once, when its backend starts, and must see one CPU). Starting Python and importing JAX and
NumPy is about 0.85 s of a small model's 1.3 s capture. A process that captures again (the tests,
`specialize examples`, the fuzzer, a dataset campaign) keeps a zygote: a child that pinned itself
to the worker's CPU and imported what the worker imports -- JAX, but no backend started -- then
forks one worker per capture. The fork takes the capture's environment (XLA_FLAGS among it),
sets the worker's deadline and parent-death signal, and runs the worker's main, whose XLA starts
there as in a fresh worker. The first capture of a process runs the worker directly: a one-shot
command pays for no zygote.

The zygote serves one capture at a time over its stdin/stdout (one JSON line in; `pid N`, then
`exit N` out) and ends with its caller (parent-death signal, or its stdin closing); the worker it
forked ends with the zygote, so killing the caller ends both. Only the main thread uses one (Linux's
parent-death signal follows the thread that started the child). It is started again when a
variable the imports read (`_IMPORTED`: JAX's, XLA's, NumPy's, Python's, ours) differs.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

# set per capture (capture.run_worker): none of them is read before the worker's main runs
PER_CAPTURE = ("XLA_FLAGS", "SPECIALIZER_LOWER_INT8", "SPECIALIZER_EVERY_LAYER", "SPECIALIZER_CAPTURE_DEADLINE")
# the variables the zygote's imports can read: a zygote serves a capture only if they are as they
# were when it started (the fork gets the whole environment; pytest's PYTEST_CURRENT_TEST, which
# changes every test, must not start a new zygote)
_IMPORTED = ("JAX_", "XLA_", "TF_", "PYTHON", "OPENBLAS", "OMP_", "MKL_", "NUMPY", "LD_", "SPECIALIZER_")


@dataclass(frozen=True)
class Result:
    returncode: int
    stderr: str
    timed_out: bool = False


class _Zygote:
    def __init__(self, env: dict):
        self.key = _key(env)
        base = {k: v for k, v in env.items() if k not in PER_CAPTURE}
        self.proc = subprocess.Popen([sys.executable, "-m", "specializer.capture.warm"], env=base,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.buf = b""  # read with os.read: a buffered reader could hold a line select() then never sees

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, argv: list[str], env: dict, stderr: Path, timeout: float) -> Result | None:
        """The worker's exit code and stderr; None if the zygote failed before the worker started
        (the caller runs it directly). Anything raised here (an interrupt) ends the zygote: a
        request left half answered would put the next one's lines out of step."""
        try:
            return self._run(argv, env, stderr, timeout)
        except BaseException:
            self.close()
            raise

    def _run(self, argv: list[str], env: dict, stderr: Path, timeout: float) -> Result | None:
        try:
            self.proc.stdin.write(json.dumps({"argv": argv, "env": env, "cwd": os.getcwd(),
                                              "stderr": str(stderr)}).encode() + b"\n")
            self.proc.stdin.flush()
            pid = self._number("pid", timeout=30)
        except (OSError, ValueError, TimeoutError):
            self.close()
            return None
        timed_out = False
        try:
            code = self._number("exit", timeout)
        except TimeoutError:
            timed_out = True
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended as the time ran out: its exit line is on the way
                pass
            try:
                code = self._number("exit", timeout=30)
            except (TimeoutError, ValueError):
                self.close()
                code = -signal.SIGKILL
        except ValueError:  # the zygote died under the worker: the worker's end, as a crash is
            self.close()
            code = -signal.SIGKILL
        text = stderr.read_text(errors="replace") if stderr.exists() else ""
        stderr.unlink(missing_ok=True)
        return Result(code, text or "the capture worker was killed", timed_out)

    def _number(self, word: str, timeout: float) -> int:
        tag, _, value = self._line(timeout).partition(" ")
        n = int(value)
        if tag != word or (word == "pid" and n <= 0):
            raise ValueError(f"the zygote said '{tag} {value}', expected {word}")
        return n

    def _line(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                raise ValueError("the zygote ended")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode().strip()

    def close(self) -> None:
        try:
            self.proc.kill()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass


def _key(env: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in env.items() if k.startswith(_IMPORTED) and k not in PER_CAPTURE))


_LOCK = threading.Lock()
_STATE: dict = {"zygote": None, "pid": None, "captures": 0}


def _forked() -> None:
    global _LOCK
    _LOCK = threading.Lock()  # a fork of the caller: the lock may have been held by another thread


os.register_at_fork(after_in_child=_forked)


def run(argv: list[str], env: dict, stderr: Path, timeout: float) -> Result | None:
    """Run the capture worker with `argv` in a fork of this process's zygote; None when this process
    has no zygote yet (its first capture: run the worker directly) or it failed."""
    with _LOCK:
        if _STATE["pid"] != os.getpid():  # a fork of the caller has its own zygote, or none
            _STATE.update(zygote=None, pid=os.getpid(), captures=0)
        _STATE["captures"] += 1
        if (_STATE["captures"] == 1 or os.environ.get("SPECIALIZER_CAPTURE_ZYGOTE") == "0"
                or threading.current_thread() is not threading.main_thread()):
            return None
        z = _STATE["zygote"]
        if z is not None and (not z.alive() or z.key != _key(env)):
            z.close()
            z = None
        if z is None:
            try:
                z = _STATE["zygote"] = _Zygote(env)
            except OSError:
                return None
        result = z.run(argv, env, stderr, timeout)
        if result is None:
            _STATE["zygote"] = None
        return result


def _serve() -> None:
    """The zygote: imports done (capture_worker pinned this process and set its parent-death
    signal on import), one fork per request line."""
    from specializer.capture import capture_worker

    import jax  # noqa: F401 - imported here once; its backend starts in each fork
    import jax.numpy  # noqa: F401

    for line in sys.stdin:
        req = json.loads(line)
        zygote = os.getpid()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                fd = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(fd, 2)
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.chdir(req["cwd"])
                os.environ.clear()
                os.environ.update(req["env"])
                sys.argv = [capture_worker.__file__, *req["argv"]]
                sys.path[0] = req["cwd"]  # as `python -m` started there would have it
                code = capture_worker.run_as_worker(req["argv"], zygote=zygote)
            except BaseException:  # noqa: BLE001 - a fork never returns into the zygote's loop
                code = 1
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        sys.stdout.write(f"pid {pid}\n")
        sys.stdout.flush()
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(f"exit {os.waitstatus_to_exitcode(status)}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
