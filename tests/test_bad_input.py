"""Bad input: one plain line on stderr, non-zero exit, no traceback, no half-written output."""

import subprocess
import sys
from pathlib import Path

import pytest

from specializer import tools
from specializer.errors import UserError

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]


def run_cli(*args, cwd=None):
    return subprocess.run([*SPECIALIZE, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def assert_one_line_error(r, *fragments):
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


def test_unsupported_op_names_op_and_hlo_name(tmp_path):
    src = tmp_path / "sorter.py"
    src.write_text("import jax.numpy as jnp\nimport numpy as np\n"
                   "def sorter(x):\n    return jnp.sort(x)\n"
                   "sorter.example_inputs = {'x': np.arange(8, dtype=np.float32)[::-1].copy()}\n")
    out = tmp_path / "out"
    r = run_cli("capture", f"{src}:sorter", "-o", out)
    assert_one_line_error(r, "unsupported op", "HLO instruction 'sort", "f32[8]")
    assert not out.exists()  # nothing half-written


def test_unparsable_ll_reports_line_and_column(tmp_path):
    ll = tmp_path / "model.ll"
    ll.write_text("define void @f() {\n  ret i32 %nope\n}\n")
    r = run_cli(ll)
    assert_one_line_error(r, f"{ll}:2:")


def test_missing_tool_names_debian_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UserError, match=r"apt-get install qemu-system-arm"):
        tools.find_tool("qemu-system-arm")


def test_missing_tool_from_cli(tmp_path, captured):
    c = captured("quadratic")
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path)}
    r = subprocess.run([*SPECIALIZE, c.model_ll], capture_output=True, text=True, env=env)
    assert_one_line_error(r, "apt-get install")


def test_wrong_target_ll(tmp_path):
    ll = tmp_path / "x86.ll"
    ll.write_text('target triple = "x86_64-unknown-linux-gnu"\ndefine void @f() {\n  ret void\n}\n')
    r = run_cli(ll)
    assert_one_line_error(r, "x86_64-unknown-linux-gnu")


def test_bad_capture_target(tmp_path):
    r = run_cli("capture", tmp_path / "nothere.py:f", "-o", tmp_path / "o")
    assert_one_line_error(r, "no such file")


def test_faulting_model_reports_pc(tmp_path, captured):
    """A model whose entry faults: the harness reports the PC, the CLI says so in one line."""
    c = captured("quadratic")
    text = c.model_ll.read_text().replace(
        "define void @quadratic_run() {\nentry:\n",
        "define void @quadratic_run() {\nentry:\n  store volatile i32 0, ptr inttoptr (i32 -16 to ptr)\n")
    bad = tmp_path / "model.ll"
    bad.write_text(text)
    (tmp_path / "model.json").write_text(c.manifest_json.read_text())
    r = run_cli(bad)
    assert_one_line_error(r, "hard fault at PC 0x")


def test_hanging_model_times_out(tmp_path, captured):
    c = captured("quadratic")
    text = c.model_ll.read_text().replace(
        "define void @quadratic_run() {\nentry:\n",
        "define void @quadratic_run() {\nentry:\n  br label %spin\nspin:\n"
        "  %v = load volatile i32, ptr @quadratic_in_a\n  br label %spin\nafter:\n")
    bad = tmp_path / "model.ll"
    bad.write_text(text)
    (tmp_path / "model.json").write_text(c.manifest_json.read_text())
    r = run_cli(bad, "--timeout", "3")
    assert_one_line_error(r, "did not finish")
