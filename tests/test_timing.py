"""Where the time goes (specializer/timing.py, `specialize -v`): self times add up to the wall
time, nothing is recorded when nobody asks, and the times never change what a command prints
on stdout or writes as its report."""

import json
import subprocess
import sys
import time

from specializer import timing

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]


def test_self_times_add_up_to_the_wall_time():
    with timing.recording() as rec:
        with timing.phase("outer"):
            time.sleep(0.02)
            with timing.phase("inner"):
                time.sleep(0.03)
            with timing.phase("inner"):
                time.sleep(0.01)
        time.sleep(0.01)
    rows = {name: (calls, s) for name, calls, s in rec.rows()}
    assert rows["inner"][0] == 2 and rows["outer"][0] == 1
    assert 0.035 <= rows["inner"][1] < 0.2  # both calls
    assert 0.015 <= rows["outer"][1] < 0.2  # without what ran inside it
    assert abs(sum(s for _, _, s in rec.rows()) - rec.total) < 1e-6  # with "untimed", exactly the wall time
    assert rec.rows()[-1][0] == timing.UNTIMED and rows[timing.UNTIMED][1] >= 0.005
    assert [n for n, _, _ in rec.rows()[:2]] == ["inner", "outer"]  # slowest first


def test_nothing_is_recorded_without_a_recorder():
    with timing.phase("alone"):
        pass
    with timing.recording() as rec:
        pass
    assert [n for n, _, _ in rec.rows()] == [timing.UNTIMED]


def test_verbose_prints_the_phases_and_changes_nothing_else(captured, tmp_path):
    c = captured("quadratic")
    base = [*SPECIALIZE, str(c.model_ll), "--variants", "lto", "-q", "--no-cache"]  # built, not reused
    plain = subprocess.run([*base, "-o", tmp_path / "a"], capture_output=True, text=True)
    verbose = subprocess.run([*base, "-o", tmp_path / "b", "-v"], capture_output=True, text=True)
    assert plain.returncode == verbose.returncode == 0, verbose.stderr
    assert verbose.stdout == plain.stdout.replace(str(tmp_path / "a"), str(tmp_path / "b"))
    assert plain.stderr == ""
    lines = verbose.stderr.splitlines()
    assert lines[0] == "specialize: quadratic: where the time went"
    names = {ln.split("  ")[0] for ln in lines[2:]}
    for phase in ("codegen", "pass O2", "pass link", "firmware link", "qemu run", timing.UNTIMED, "total (wall)"):
        assert phase in names, (phase, verbose.stderr)
    assert (tmp_path / "a" / "report.json").read_bytes() == (tmp_path / "b" / "report.json").read_bytes()
    as_json = subprocess.run([*base, "-o", tmp_path / "c", "-v", "--json"], capture_output=True, text=True)
    t = json.loads(as_json.stdout)["timings"]
    assert t["wall_seconds"] > 0 and {"phase": "qemu run", "calls": 1} == {
        k: v for k, v in next(p for p in t["phases"] if p["phase"] == "qemu run").items() if k != "seconds"}
    plain_json = subprocess.run([*base, "-o", tmp_path / "d", "--json"], capture_output=True, text=True)
    assert "timings" not in json.loads(plain_json.stdout)
