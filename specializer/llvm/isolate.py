"""Run LLVM work that may abort in a forked child, so an abort or crash becomes one line.

LLVM ends the process on `LLVM ERROR` (abort), a failed assertion or a stack overflow; no
Python exception is raised and nothing can be caught. A fork is cheap (copy-on-write, no
re-import): the child does the work and hands back bytes through a file; the parent reports
the child's death with LLVM's own reason line.
"""

from __future__ import annotations

import faulthandler
import os
import re
import signal
import sys
import tempfile
import warnings
from typing import Callable

from specializer.errors import UserError

_USER_ERROR = 3
_PY_ERROR = 4
# LLVM's crash boilerplate: never the reason.
_NOISE = re.compile(r"^(Stack dump|PLEASE submit|\s*#?\d+\s+0x|\s*\d+\.\s|Program arguments|Segmentation)")


def _reason(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not _NOISE.match(ln)]
    for ln in lines:
        if "LLVM ERROR:" in ln:
            return ln[ln.index("LLVM ERROR:"):]
        m = re.search(r'Assertion `.*?"(.+?)"\' failed', ln) or re.search(r"Assertion `(.+?)' failed", ln)
        if m:
            return f"assertion failed: {m.group(1)}"
    return lines[-1] if lines else ""


def run(work: Callable[[], bytes | None], what: str) -> bytes:
    """`work()` in a child process; its bytes, its UserError, or one line on how it died."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        with warnings.catch_warnings():
            # Python warns about forking a process with threads (a test process that imported JAX):
            # the child runs only LLVM on memory it owns and leaves with os._exit
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            pid = os.fork()
        if pid == 0:  # child: never returns into the parent's code
            code = 0
            try:
                faulthandler.disable()  # a crash here is reported by the parent, not dumped
                os.dup2(err.fileno(), 2)
                data = work()
                out.write(data or b"")
            except UserError as e:
                out.write(str(e).encode())
                code = _USER_ERROR
            except BaseException as e:  # noqa: BLE001 - reported by the parent as one line
                out.write(f"{type(e).__name__}: {e}".encode())
                code = _PY_ERROR
            finally:
                out.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        data, stderr = out.read(), err.read().decode(errors="replace")
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return data
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _USER_ERROR:
        raise UserError(data.decode(errors="replace"))
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _PY_ERROR:
        raise UserError(f"{what} failed: {data.decode(errors='replace').splitlines()[0]}")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        how = {signal.SIGSEGV: "crashed (segmentation fault)", signal.SIGABRT: "aborted",
               signal.SIGBUS: "crashed (bus error)", signal.SIGILL: "crashed (illegal instruction)",
               signal.SIGKILL: "was killed (out of memory?)"}.get(sig, f"died of signal {sig}")
    else:
        how = f"exited with status {os.WEXITSTATUS(status)}"
    reason = _reason(stderr)
    raise UserError(f"LLVM {how} while {what}" + (f": {reason}" if reason else ""))
