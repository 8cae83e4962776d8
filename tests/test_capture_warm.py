"""Captures after a process's first are forked from a zygote that imported JAX once (warm.py): the
same bytes as a fresh worker's, the same timeout, and nothing left running when the caller is
killed."""

import filecmp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from specializer.capture import warm
from specializer.capture.capture import capture
from specializer.errors import UserError

MODEL = ("import jax.numpy as jnp, numpy as np\n"
         "def f(x, w):\n"
         "    return jnp.tanh(x @ w) + jnp.float32({k})\n"
         "f.example_inputs = {{'x': np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8)}}\n"
         "f.weights = {{'w': np.full((8, 8), 0.25, np.float32)}}\n")
SPIN = ("import jax, jax.numpy as jnp, numpy as np\n"
        "def spin(x):\n"
        "    return jax.lax.while_loop(lambda c: c[0] >= 0, lambda c: (c[0] * 1, c[1] + 1), (jnp.int32(0), x))[1]\n"
        "spin.example_inputs = {'x': np.ones(4, np.float32)}\n")


def _model(tmp_path: Path, name: str, k: int) -> Path:
    src = tmp_path / f"{name}.py"
    src.write_text(MODEL.format(k=k))
    return src


def test_a_forked_capture_is_the_bytes_of_a_fresh_worker(tmp_path, monkeypatch):
    a, b = _model(tmp_path, "a", 1), _model(tmp_path, "b", 2)
    capture(a, "f", tmp_path / "first")  # this process's first capture, or a later one: either way
    forked = capture(b, "f", tmp_path / "forked")
    assert warm._STATE["zygote"] is not None and warm._STATE["zygote"].alive()
    monkeypatch.setenv("SPECIALIZER_CAPTURE_ZYGOTE", "0")  # a worker started afresh
    fresh = capture(b, "f", tmp_path / "fresh")
    for f in ("model.ll", "model.json"):
        assert filecmp.cmp(forked.model_ll.parent / f, fresh.model_ll.parent / f, shallow=False), f


def test_a_forked_worker_is_killed_at_its_timeout_and_the_next_capture_runs(tmp_path):
    capture(_model(tmp_path, "a", 3), "f", tmp_path / "a")
    spin = tmp_path / "spin.py"
    spin.write_text(SPIN)
    t = time.monotonic()
    with pytest.raises(UserError, match="did not finish within 5 s"):
        capture(spin, "spin", tmp_path / "spin", timeout=5)
    assert time.monotonic() - t < 20  # killed at 5 s (the worker's own alarm would come at 35 s)
    z = warm._STATE["zygote"]
    assert z is not None and not _children(z.proc.pid), "the timed-out worker still runs"
    assert capture(_model(tmp_path, "b", 4), "f", tmp_path / "b").model_ll.is_file()


def test_the_zygote_serves_on_while_only_variables_its_imports_do_not_read_change(tmp_path, monkeypatch):
    capture(_model(tmp_path, "a", 6), "f", tmp_path / "a")
    capture(_model(tmp_path, "b", 7), "f", tmp_path / "b")
    z = warm._STATE["zygote"]
    monkeypatch.setenv("SOME_TOOL_STATE", "changes every call")  # as PYTEST_CURRENT_TEST does
    capture(_model(tmp_path, "c", 8), "f", tmp_path / "c")
    assert warm._STATE["zygote"] is z and z.alive()
    monkeypatch.setenv("JAX_DEFAULT_PRNG_IMPL", "threefry2x32")  # read when JAX is imported
    capture(_model(tmp_path, "d", 9), "f", tmp_path / "d")
    assert warm._STATE["zygote"] is not z and not z.alive()


def _children(pid: int) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and int(_status(d)["PPid"]) == pid:
                found.append(int(d.name))
        except (OSError, KeyError, ValueError):
            continue
    return found


def _status(d: Path) -> dict:
    return dict(line.split(":\t", 1) for line in (d / "status").read_text().splitlines() if ":\t" in line)


def _alive(pid: int) -> bool:
    try:
        return _status(Path(f"/proc/{pid}"))["State"][0] != "Z"
    except (OSError, KeyError):
        return False


def test_killing_the_caller_ends_the_zygote_and_its_worker(tmp_path):
    """SIGKILL (a CI step's timeout) of a process whose second capture runs a model's endless loop:
    its zygote and the worker it forked end too."""
    spin = tmp_path / "spin.py"
    spin.write_text(SPIN)
    script = tmp_path / "caller.py"
    script.write_text("import sys\nfrom pathlib import Path\nfrom specializer.capture.capture import capture\n"
                      f"capture(Path({str(_model(tmp_path, 'a', 5))!r}), 'f', Path({str(tmp_path / 'a')!r}))\n"
                      f"capture(Path({str(spin)!r}), 'spin', Path({str(tmp_path / 'spin')!r}), timeout=600)\n")
    caller = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    zygote = worker = None
    try:
        end = time.monotonic() + 90
        while worker is None and time.monotonic() < end:
            zygotes = _children(caller.pid)
            if zygotes:
                zygote = zygotes[0]
                workers = _children(zygote)
                worker = workers[0] if workers else None
            time.sleep(0.2)
        assert worker is not None, "the second capture was not forked from a zygote"
        time.sleep(2)  # inside the model's loop by now
    finally:
        caller.send_signal(signal.SIGKILL)
        caller.wait()
    end = time.monotonic() + 20
    while (_alive(zygote) or _alive(worker)) and time.monotonic() < end:
        time.sleep(0.2)
    left = [p for p in (zygote, worker) if _alive(p)]
    for p in left:  # do not leave them running whatever the verdict
        os.kill(p, signal.SIGKILL)
    assert not left, "the zygote or its worker outlived the caller"
