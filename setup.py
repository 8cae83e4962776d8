"""Metadata lives in pyproject.toml; this only puts the shipped sources inside the wheel.

libkernels/, cmsis_nn_shim/, examples/ and the QEMU header fetch script stay at the top of the
checkout (the project's layout); an installed package finds them inside itself
(specializer/tools.py `shipped`). Editable installs keep using the checkout's copies."""

import runpy
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = runpy.run_path(str(Path(__file__).parent / "specializer" / "shipped.py"))["SHIPPED"]


class BuildPyWithSources(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for rel in SHIPPED:
            src, dst = Path(rel), Path(self.build_lib) / "specializer" / rel
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)


setup(cmdclass={"build_py": BuildPyWithSources})
