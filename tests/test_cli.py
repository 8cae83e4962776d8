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


def test_an_output_directory_that_is_a_file_is_one_error_and_nothing_is_written(captured, tmp_path):
    c = captured("quadratic")
    existing = tmp_path / "existing"
    existing.write_text("mine\n")
    for cmd in (["capture", "examples/quadratic.py:quadratic"], [c.model_ll], ["bundle", c.model_ll],
                ["examples", "quadratic"]):
        for out in (existing, existing / "sub"):
            r = run_cli(*cmd, "-o", out)
            assert r.returncode == 2, (cmd, r.stderr)
            error = r.stderr.strip().splitlines()[-1]
            assert error.endswith(f"argument -o/--output: {out}: exists and is not a directory") or \
                error.endswith(f"argument -o/--output: {out}: {existing} is not a directory"), (cmd, error)
            assert "Traceback" not in r.stderr
    assert existing.read_text() == "mine\n"


def test_a_directory_that_cannot_be_made_is_one_line():
    r = run_cli("capture", "examples/quadratic.py:quadratic", "-o", "/proc/specializer-test/out")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == ["specialize: error: /proc/specializer-test: No such file or directory"]


def test_a_full_disk_is_one_line(captured, tmp_path, monkeypatch, capsys):
    """An OSError writing a path (ENOSPC here) ends the command with one line naming the path."""
    import errno

    from specializer import cli, files

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(files, "write", full)
    c = captured("quadratic")
    assert cli.main([str(c.model_ll), "-S", "-o", str(tmp_path / "out.ll")]) == 2
    assert capsys.readouterr().err.splitlines() == [f"specialize: error: {tmp_path / 'out.ll'}: No space left on device"]
