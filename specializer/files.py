"""Files in and out: outputs written so that none is ever half-written (a temporary name, then a
rename), and a model file read or refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

from specializer.errors import UserError


def write_all(files: list[tuple[Path, str | bytes]]) -> None:
    """Write every file under a temporary name first, then rename them all: an error while
    writing leaves the previous files (or none), never a truncated one or one without its peer."""
    temps = []
    try:
        for path, data in files:
            path = Path(path)
            tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
            temps.append((tmp, path))
            tmp.write_bytes(data) if isinstance(data, bytes) else tmp.write_text(data)
        for tmp, path in temps:
            os.replace(tmp, path)
    finally:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)


def write(path: Path, data: str | bytes) -> None:
    write_all([(path, data)])


def read_bytes(path: Path) -> bytes:
    """A model file's bytes, or one line saying why not."""
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
