"""Build products shared by processes: made once, published whole, never read half-made.

The build directory (tools.build_dir) is shared by CI jobs, `pytest`, the fuzzer's workers and
two users on one machine. Every product in it -- the fetched CMSIS-DSP sources, the kernel
library's bitcode and object, the QEMU plugin -- is made under its entry's lock and published
by one rename:

    with cache.making(path):                 # one process makes it; the others wait, then find it
        if not path.exists():
            cache.publish(path, data)         # a private temporary name, then os.replace

A process that finds an entry finds all of it; one that dies while making it leaves at most a
temporary file (named `.<entry>.<random>`), which nobody reads. Entries are named by what
determines them (a digest of their inputs), so they are never rewritten in place.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable


@contextlib.contextmanager
def making(path: Path):
    """Hold the lock of entry `path` for the block (an flock on `<path>.lock`, released when the
    process ends however it ends): who checks for an entry and makes it inside the block never
    races another process doing the same."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def temporary(path: Path, suffix: str = "") -> Path:
    """A fresh private file name beside entry `path` (same file system: the rename is atomic)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # as an ordinary new file (mkstemp makes it private)
    return Path(tmp)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def publishing(path: Path, suffix: str = ""):
    """A private temporary name beside `path` for the block to write (a tool's `-o`); renamed to
    `path` when the block ends normally, removed when it raises."""
    tmp = temporary(path, suffix)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def publish(path: Path, data: bytes) -> Path:
    """Entry `path` holds `data`, written under a private name and renamed into place."""
    with publishing(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def made(path: Path, make: Callable[[Path], None]) -> Path:
    """File entry `path`, made unless it is there: `make(tmp)` writes it under a temporary name,
    holding the entry's lock (the others wait, then find it)."""
    path = Path(path)
    if not path.is_file():
        with making(path):
            if not path.is_file():
                with publishing(path, path.suffix) as tmp:
                    make(tmp)
    return path


_FILES: dict[tuple, str] = {}


def file_digest(path: Path) -> str:
    """`digest` of a file's bytes, read once per process while its size and mtime stay the same."""
    p = Path(path)
    st = p.stat()
    k = (str(p), st.st_size, st.st_mtime_ns)
    if k not in _FILES:
        _FILES[k] = digest(p.read_bytes())
    return _FILES[k]


def publish_dir(path: Path, staged: Path) -> Path:
    """Directory entry `path` becomes `staged` (made beside it) by one rename; a stale copy
    (made by an older version, incomplete) is moved aside first. Call it holding `making(path)`."""
    path = Path(path)
    if path.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old.", dir=path.parent))
        os.replace(path, old / "stale")
        shutil.rmtree(old, ignore_errors=True)
    os.replace(staged, path)
    return path


def digest(*parts: bytes | str) -> str:
    """A key from the inputs that determine an entry (each part delimited, so no two lists of
    parts give the same bytes)."""
    h = hashlib.sha256()
    for p in parts:
        b = p.encode() if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little") + b)
    return h.hexdigest()


_TOOL: list[str] = []


def tool_digest() -> str:
    """What a product depends on besides its own inputs: this package's files (every module: the
    passes, the code generator's options, the target; the firmware harness and the QEMU plugin's
    source) and the LLVM it runs (llvmlite's build). Any edit to the tool makes new entries; old
    ones are never read again."""
    if not _TOOL:
        import llvmlite
        import llvmlite.binding as llvm

        root = Path(__file__).resolve().parent
        parts: list[bytes | str] = [llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info))]
        for f in sorted(root.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                parts += [str(f.relative_to(root)), f.read_bytes()]
        _TOOL.append(digest(*parts))
    return _TOOL[0]
