"""The CLI's own surface: `help [COMMAND]`, per-command usage, progress lines and -q."""

import subprocess
import sys

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]


def run_cli(*args):
    return subprocess.run([*SPECIALIZE, *map(str, args)], capture_output=True, text=True)


def test_help_lists_commands():
    r = run_cli("help")
    assert r.returncode == 0 and "specialize capture" in r.stdout and "specialize run" in r.stdout


def test_help_of_each_command_names_it():
    for cmd in ("run", "capture", "examples", "diff", "diff-ir", "opt"):
        r = run_cli("help", cmd)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"usage: specialize {cmd} "), r.stdout
    r = run_cli("help", "specialize")
    assert r.returncode == 0 and "--flash-budget" in r.stdout and "--all-args" in r.stdout


def test_help_of_unknown_command_is_one_line():
    r = run_cli("help", "frobnicate")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "specialize: error: help: no command 'frobnicate' (have: run, capture, examples, diff, diff-ir, bundle, opt, layers, specialize)"]


def test_progress_on_stderr_and_quiet(captured, tmp_path):
    c = captured("quadratic")
    r = run_cli(c.model_ll, "--variants", "lto", "-o", tmp_path / "a", "--progress", "--no-cache")
    assert r.returncode == 0, r.stderr
    assert "[1/1] lto: building" in r.stderr and "[1/1] lto: running on QEMU" in r.stderr
    q = run_cli(c.model_ll, "--variants", "lto", "-o", tmp_path / "b")  # not a terminal: quiet
    assert q.returncode == 0 and q.stderr == ""
    assert q.stdout == r.stdout.replace(str(tmp_path / "a"), str(tmp_path / "b"))
