"""The package works when installed normally, not only from the checkout (editable install).

A wheel is built from the tracked files, unpacked as pip would install it, and an example runs
from it in a directory outside the checkout: kernel sources, the CMSIS-NN shim, the harness and
the examples come from the package data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile

from specializer.tools import build_dir, repo_root


def _tracked_copy(dest):
    files = subprocess.run(["git", "ls-files", "-z"], cwd=repo_root(), capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = repo_root() / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def test_installed_wheel_runs_an_example(tmp_path):
    src, wheels, site = tmp_path / "src", tmp_path / "wheels", tmp_path / "site"
    _tracked_copy(src)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(wheels), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (wheel,) = wheels.glob("specializer-*.whl")
    zipfile.ZipFile(wheel).extractall(site)
    # the fetched CMSIS-DSP sources and the built plugin are reused from this checkout's cache
    env = {**os.environ, "PYTHONPATH": str(site), "SPECIALIZER_BUILD_DIR": str(build_dir())}
    where = subprocess.run([sys.executable, "-c", "import specializer.tools as t; "
                            "print(t.from_checkout(), t.shipped('libkernels'), t.shipped('examples'))"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr
    checkout, kernels, examples = where.stdout.split()
    assert checkout == "False" and kernels.startswith(str(site)) and examples.startswith(str(site))
    assert (site / "specializer" / "libkernels" / "matmul_f32.c").is_file()
    assert (site / "specializer" / "cmsis_nn_shim" / "src").is_dir()
    run = subprocess.run([sys.executable, "-m", "specializer.cli", "examples", "quadratic", "-o", str(tmp_path / "ex")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "| quadratic | pass" in run.stdout
