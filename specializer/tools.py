"""Locating the external tools, with the Debian package that provides each."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from specializer.errors import UserError

# tool -> Debian package that installs it
PACKAGES = {
    "clang-19": "clang-19",
    "llvm-link-19": "llvm-19",
    "llvm-mca-19": "llvm-19",
    "llvm-objdump-19": "llvm-19",
    "arm-none-eabi-gcc": "gcc-arm-none-eabi",
    "arm-none-eabi-objdump": "binutils-arm-none-eabi",
    "arm-none-eabi-ld": "binutils-arm-none-eabi",
    "arm-none-eabi-objcopy": "binutils-arm-none-eabi",
    "arm-none-eabi-ar": "binutils-arm-none-eabi",
    "qemu-system-arm": "qemu-system-arm",
    "cc": "gcc",
}


def find_tool(name: str) -> str:
    """Absolute path of `name` on PATH, or a UserError naming the package to install."""
    path = shutil.which(name)
    if path is None:
        pkg = PACKAGES.get(name, name)
        raise UserError(f"'{name}' not found on PATH: install it with 'apt-get install {pkg}'")
    return path



def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def from_checkout() -> bool:
    """Running from a source checkout (an editable install or PYTHONPATH), not an installed wheel."""
    root = repo_root()
    return (root / "pyproject.toml").is_file() and (root / "libkernels").is_dir()


def shipped(rel: str) -> Path:
    """One of shipped.SHIPPED: the checkout's copy when running from one, else the installed package's."""
    return repo_root() / rel if from_checkout() else Path(__file__).resolve().parent / rel


def build_dir() -> Path:
    """Where fetched sources and built helpers are cached (SPECIALIZER_BUILD_DIR overrides):
    build/ in a checkout, the user's cache directory for an installed package."""
    if "SPECIALIZER_BUILD_DIR" in os.environ:
        d = Path(os.environ["SPECIALIZER_BUILD_DIR"])
    elif from_checkout():
        d = repo_root() / "build"
    else:
        d = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "specializer"
    d.mkdir(parents=True, exist_ok=True)
    return d
