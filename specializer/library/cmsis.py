"""Third-party kernel sources, fetched at build time and never committed.

CMSIS-DSP comes from the `cmsisdsp` source distribution (pinned, hash-checked, fetched with pip).
CMSIS-NN is either a checkout the user points at (SPECIALIZER_CMSIS_NN or --cmsis-nn) or the
API-compatible shim in cmsis_nn_shim/. Captured models call CMSIS-NN v7.0.0's API; libjit.build
checks a checkout's headers against it (cmsis_api.py's table, cmsis_checkout.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from specializer import cache
from specializer.errors import UserError
from specializer.tools import build_dir, shipped

CMSIS_DSP_VERSION = "1.10.3"
CMSIS_DSP_SHA256 = "307d32298faa7c58db912851027fce35f886fec7eb1a27c4b309ce1a97f47519"
# The CMSIS-NN function libjit's own int8 kernel calls (libkernels/nn_s8.c); a checkout without it is too old.
NEEDED_NN_FUNCTION = "arm_nn_mat_mult_nt_t_s8_s32"
# CMSIS-NN's float kernels (main after v7.0.0: *_f32.c, *_f16.c, arm_nntables_flt.c) exist only
# with ARM_NN_ENABLE_F32/F16, off in its own default build; libjit's float kernels are its own.
FLOAT_SUFFIXES = ("_f16", "_f32", "_flt")


def cmsis_dsp() -> Path:
    """The unpacked CMSIS-DSP tree (Include/, PrivateInclude/, Source/); fetched on first use."""
    dest = build_dir() / "cmsis" / f"cmsisdsp-{CMSIS_DSP_VERSION}"
    if (dest / "Include" / "arm_math.h").is_file():  # published whole: all of it is there
        return dest
    with cache.making(dest):  # one process fetches; the others wait and find it
        if not (dest / "Include" / "arm_math.h").is_file():
            _fetch_dsp(dest)
    return dest


def _fetch_dsp(dest: Path) -> None:
    with tempfile.TemporaryDirectory(prefix=f".{dest.name}.", dir=dest.parent) as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text(f"cmsisdsp=={CMSIS_DSP_VERSION} --hash=sha256:{CMSIS_DSP_SHA256}\n")
        # --no-binary: the sdist carries the C sources; --require-hashes: pinned by content.
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--no-binary", "cmsisdsp", "--require-hashes", "-r", str(req), "-d", tmp],
                           capture_output=True, text=True)
        sdists = list(Path(tmp).glob("cmsisdsp-*.tar.gz"))
        if r.returncode != 0 or not sdists:
            last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise UserError(f"could not fetch the CMSIS-DSP sources (pip download cmsisdsp=="
                            f"{CMSIS_DSP_VERSION}): {last}")
        with tarfile.open(sdists[0]) as tar:
            members = [m for m in tar.getmembers()
                       if m.isfile() and m.name.split("/")[1:2] in (["Include"], ["PrivateInclude"], ["Source"])]
            tar.extractall(tmp, members=members, filter="data")
        cache.publish_dir(dest, Path(tmp) / f"cmsisdsp-{CMSIS_DSP_VERSION}")  # all or nothing


@dataclass(frozen=True)
class CmsisNN:
    """Where the CMSIS-NN API comes from: 'shim' (cmsis_nn_shim/) or a real checkout."""
    kind: str  # shim | checkout
    root: Path
    include_dirs: tuple[Path, ...]
    sources: tuple[Path, ...]

    def describe(self) -> str:
        return "cmsis_nn_shim (built-in)" if self.kind == "shim" else f"CMSIS-NN checkout at {self.root}"


def cmsis_nn(path: str | os.PathLike | None = None) -> CmsisNN:
    """The CMSIS-NN to build against: `path`, else $SPECIALIZER_CMSIS_NN, else the shim."""
    path = path or os.environ.get("SPECIALIZER_CMSIS_NN") or None
    shim = shipped("cmsis_nn_shim")
    if path is None:
        return CmsisNN("shim", shim, (shim / "include", shim / "include" / "compiler"),
                       tuple(sorted((shim / "src").glob("*.c"))))
    root = Path(path).resolve()
    header = root / "Include" / "arm_nnfunctions.h"
    if not header.is_file() or not (root / "Source").is_dir():
        raise UserError(f"{path} is not a CMSIS-NN checkout (no Include/arm_nnfunctions.h and Source/)")
    support = root / "Include" / "arm_nnsupportfunctions.h"
    if not support.is_file() or NEEDED_NN_FUNCTION not in support.read_text(errors="replace"):
        raise UserError(f"{path}: CMSIS-NN checkout too old (libjit needs {NEEDED_NN_FUNCTION} in "
                        f"Include/arm_nnsupportfunctions.h; use CMSIS-NN v7.0.0)")
    # Real CMSIS-NN layout: Include/ (with Include/Internal/, reached as "Internal/..."),
    # Source/<Group>/*.c. Only the checkout's headers are used (the shim's arm_nn*.h stay off
    # the path); the shim supplies just the compiler intrinsics header that CMSIS-DSP needs.
    return CmsisNN("checkout", root, (root / "Include", shim / "include" / "compiler"),
                   tuple(s for s in sorted(root.glob("Source/*/*.c")) if not s.stem.endswith(FLOAT_SUFFIXES)))
