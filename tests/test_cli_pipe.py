"""A reader that closes the pipe early (`specialize ... | head`) ends the tool quietly: exit 141
(128 + SIGPIPE, as a program killed by it), no traceback."""

from __future__ import annotations

import os

from specializer import cli


class _ClosedPipe:
    """stdout whose reader has gone: every write fails as a closed pipe's does."""

    def __init__(self, fd: int):
        self.fd = fd

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass

    def fileno(self):
        return self.fd


def test_closed_pipe_is_exit_141_not_a_traceback(tmp_path, monkeypatch):
    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)
    try:
        monkeypatch.setattr("sys.stdout", _ClosedPipe(fd))
        assert cli.main(["--help"]) == 141
    finally:
        os.close(fd)
