"""The shared build directory: concurrent writers of one entry on an empty cache make it once,
and every process reads it whole (cache.py; libjit.build, the library object, the QEMU plugin)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from specializer import cache
from specializer.tools import build_dir


def _writer(entry: str, log: str, size: int) -> None:
    """Make `entry` unless it is there, slowly, appending to `log` each time it is made."""
    path = Path(entry)
    with cache.making(path):
        if not path.exists():
            with open(log, "a") as f:
                f.write("made\n")
            data = bytes(i % 251 for i in range(size))
            tmp = cache.temporary(path)
            # written in pieces: a reader that did not wait would see a short file
            with open(tmp, "wb") as f:
                for i in range(0, size, 4096):
                    f.write(data[i:i + 4096])
                    f.flush()
            tmp.replace(path)
    assert path.read_bytes() == bytes(i % 251 for i in range(size))


def test_concurrent_writers_of_one_entry_make_it_once(tmp_path):
    entry, log = tmp_path / "cache" / "entry.bin", tmp_path / "made.log"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(entry), str(log), 1 << 20)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 6  # every one read the whole entry
    assert log.read_text() == "made\n"
    assert sorted(p.name for p in entry.parent.iterdir()) == ["entry.bin", "entry.bin.lock"]  # no temporary left


def test_publish_replaces_whole_and_leaves_no_temporary(tmp_path):
    entry = tmp_path / "e"
    cache.publish(entry, b"first")
    cache.publish(entry, b"second")
    assert entry.read_bytes() == b"second" and [p.name for p in tmp_path.iterdir()] == ["e"]
    staged = tmp_path / ".d.new"
    staged.mkdir()
    (staged / "f").write_text("new")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "stale").write_text("old")
    cache.publish_dir(tmp_path / "d", staged)
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["f"] and sorted(p.name for p in tmp_path.iterdir()) == ["d", "e"]


def test_digest_keeps_parts_apart():
    assert cache.digest("ab", "c") != cache.digest("a", "bc")
    assert cache.digest(b"x") == cache.digest("x") and len(cache.tool_digest()) == 64


# Three processes on one empty build directory (only the fetched sources copied in): each builds
# the kernel library (a small one: one source of ours and the shim), its O2 object and the QEMU
# plugin. Before the lock, they compiled into one object directory and renamed one
# `libkernels-<hash>.tmp`: a FileNotFoundError traceback or a half-written bitcode file.
SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from specializer.library import libjit
    from specializer.optimize import variants
    from specializer.optimize.state import BuildContext
    from specializer.library import cmsis
    from specializer.run import qemu
    lib = libjit.build(src_dir=Path(sys.argv[1]))
    ctx = BuildContext(lib, cmsis.cmsis_nn())
    obj = variants._library_object(Path(sys.argv[2]), ctx)
    so = qemu.ensure_plugin()
    print(lib.bitcode, so)
""")


def test_processes_sharing_an_empty_build_directory(tmp_path):
    shared = build_dir()
    fresh = tmp_path / "build"
    (fresh / "cmsis").mkdir(parents=True)
    for d in (shared / "cmsis").iterdir():  # the fetched CMSIS-DSP sources (no network here)
        if d.is_dir() and not d.name.startswith("."):
            (fresh / "cmsis" / d.name).symlink_to(d)
    shutil.copytree(shared / "qemu-plugin" / "include", fresh / "qemu-plugin" / "include")
    src = tmp_path / "kernels"
    src.mkdir()
    (src / "k.c").write_text("int libjit_k(int x) { return x * 3 + 1; }\n")
    env = os.environ | {"SPECIALIZER_BUILD_DIR": str(fresh)}
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(src), str(tmp_path / f"libjit{i}.o")], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [e for _, e in outs]
    assert len({o for o, _ in outs}) == 1  # the same library and plugin for all
    objects = [(tmp_path / f"libjit{i}.o").read_bytes() for i in range(3)]
    assert objects[0] == objects[1] == objects[2] and objects[0][:4] == b"\x7fELF"
    left = [p for p in fresh.rglob(".*") if not p.name.endswith(".lock")]
    assert not left, left  # no temporary file or directory left behind
    assert len(list((fresh / "libjit").glob("libkernels-*.bc"))) == 1
    assert len(list((fresh / "objects").glob("libjit-*.o"))) == 1


@pytest.mark.slow
def test_six_comparisons_at_once_on_an_empty_build_directory(captured, tmp_path):
    """Issue 20's concurrency check: four comparisons of different models and two of the same model
    started together on an empty build directory (only the fetched CMSIS-DSP sources and QEMU's
    header copied in): each builds what it needs or waits for the process building it, every
    result is correct, the two of one model are identical, nothing half-made is left."""
    shared = build_dir()
    fresh = tmp_path / "build"
    (fresh / "cmsis").mkdir(parents=True)
    for d in (shared / "cmsis").iterdir():
        if d.is_dir() and not d.name.startswith("."):
            (fresh / "cmsis" / d.name).symlink_to(d)
    shutil.copytree(shared / "qemu-plugin" / "include", fresh / "qemu-plugin" / "include")
    env = os.environ | {"SPECIALIZER_BUILD_DIR": str(fresh)}
    models = ["quadratic", "softmax", "mlp", "mlp_int8", "elementwise", "elementwise"]
    procs = [subprocess.Popen([sys.executable, "-m", "specializer.cli", str(captured(m).model_ll), "-o",
                               str(tmp_path / f"out{i}"), "--json", "-j", "1"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, m in enumerate(models)]
    outs = [p.communicate(timeout=1800) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [e for _, e in outs]
    for (out, _), m in zip(outs, models):
        rows = json.loads(out)["variants"]
        assert [r["status"] for r in rows] == ["pass"] * 4, (m, rows)
    assert outs[4][0] == outs[5][0]  # the same model twice: the same report
    left = [p for p in fresh.rglob(".*") if not p.name.endswith(".lock")]
    assert not left, left
    assert len(list((fresh / "libjit").glob("libkernels-*.bc"))) == 1
