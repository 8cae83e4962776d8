"""Running a firmware ELF on QEMU's mps2-an386 (Cortex-M4F) and counting instructions.

Two ways to count the instructions of one measured call:

* ``method="plugin"``: the TCG plugin ``qemu_plugin/insn_profile.c`` counts every
  instruction executed from the moment a translation block at ``start`` begins
  until one at ``stop`` begins, and profiles the blocks run in between.
* ``method="icount"``: no plugin; with ``-icount shift=7`` every instruction takes
  2**7 ns of virtual time, i.e. 3.2 ticks of the MPS2 FPGAIO 25 MHz counter
  (0x40028018).  The firmware reads it around the measured call and around a
  one-instruction calibration call (``bx lr``) and prints ``counter <ticks>
  <calib_ticks>``; instructions = round(ticks/3.2) - round(calib/3.2) + 1.

``-icount shift=7,align=off,sleep=off`` is used in both modes, so runs are
deterministic and a plugin run reports the counter too.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from specializer import cache
from specializer.run import faults
from specializer.errors import UserError
from specializer.target import TARGET
from specializer.tools import build_dir, find_tool, shipped

MACHINE = TARGET.board
ICOUNT = "shift=7,align=off,sleep=off"
# With shift=7 one instruction is 128 ns of virtual time; the counter runs at 25 MHz.
TICKS_PER_INSN = 3.2

PLUGIN_SOURCE = Path(__file__).resolve().parent / "qemu_plugin" / "insn_profile.c"
FETCH_HEADER_SCRIPT = shipped("scripts/fetch_qemu_plugin_header.sh")

_FAULT_RE = re.compile(r"hard fault at PC 0x[0-9a-fA-F]+")
_COUNTER_RE = re.compile(r"^counter (0x[0-9a-f]+|\d+) (0x[0-9a-f]+|\d+)\s*$", re.MULTILINE)


class Hang(UserError):
    """QEMU ran past the time limit (and was killed, with its process group)."""

    def __init__(self, message: str, seconds: float):
        super().__init__(message)
        self.seconds = seconds


class LimitReached(UserError):
    """The harness's instruction-limit timer fired inside the measured call."""

    def __init__(self, message: str, where: str):
        super().__init__(message)
        self.where = where  # "PC 0x... in f+0x..", or a note that the PC is unknown


@dataclass(frozen=True)
class Insn:
    addr: int
    size: int
    text: str


@dataclass(frozen=True)
class Block:
    addr: int
    insns: tuple[Insn, ...]
    execs: int
    taken: int


@dataclass(frozen=True)
class InContext:
    """Executions of one block in one context (run with `ctx`): the last block run inside the
    measured function's code before it, e.g. the block whose call led to it."""
    ctx: int  # the context block's address (0: none yet)
    ctx_insns: int  # its number of instructions
    addr: int  # the block's address
    ninsns: int
    execs: int
    taken: int


@dataclass(frozen=True)
class Profile:
    insns: int
    taken: int
    blocks: tuple[Block, ...]
    contexts: tuple[InContext, ...] = ()  # per context (run with `ctx`), else empty


@dataclass(frozen=True)
class RunResult:
    exit_code: int
    stdout: str
    profile: Profile | None
    counter_insns: int | None


# --------------------------------------------------------------------------- plugin build


def plugin_dir() -> Path:
    return build_dir() / "qemu-plugin"


def _header_path() -> Path:
    return plugin_dir() / "include" / "qemu-plugin.h"


def fetch_header() -> Path:
    """The QEMU plugin header, fetched from Debian's qemu source package if missing."""
    header = _header_path()
    if header.is_file() and header.stat().st_size > 0:
        return header
    if not FETCH_HEADER_SCRIPT.is_file():
        raise UserError(
            f"qemu-plugin.h missing ({header}) and {FETCH_HEADER_SCRIPT} not found to fetch it"
        )
    with cache.making(header):  # one process fetches (apt-get into one directory); the others wait
        if header.is_file() and header.stat().st_size > 0:
            return header
        return _fetch_header(header)


def _fetch_header(header: Path) -> Path:
    bash = find_tool("bash")
    proc = subprocess.run(
        [bash, str(FETCH_HEADER_SCRIPT), str(build_dir())],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if proc.returncode != 0 or not header.is_file():
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit code {proc.returncode}"
        raise UserError(f"could not fetch qemu-plugin.h from Debian's qemu source package: {last}")
    return header


def _glib_cflags(header: Path) -> list[str]:
    """QEMU 7.2's qemu-plugin.h needs no glib; later versions include <glib.h>."""
    if not re.search(r"#\s*include\s*[<\"]glib\.h[>\"]", header.read_text(errors="replace")):
        return []
    pkg_config = find_tool("pkg-config")
    proc = subprocess.run(
        [pkg_config, "--cflags", "glib-2.0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if proc.returncode != 0:
        raise UserError(
            "qemu-plugin.h includes glib.h but glib-2.0 is unknown to pkg-config: "
            "install it with 'apt-get install libglib2.0-dev'"
        )
    return proc.stdout.split()


def ensure_plugin() -> Path:
    """Path of the built insn_profile plugin; built when missing. Its name carries a digest of
    the source and the header, so checkouts with different plugin sources sharing one build
    directory each get their own."""
    header = fetch_header()
    digest = hashlib.sha256(PLUGIN_SOURCE.read_bytes() + header.read_bytes()).hexdigest()[:12]
    return cache.made(plugin_dir() / f"libinsn_profile.{digest}.so", lambda tmp: _build_plugin(header, tmp))


def _build_plugin(header: Path, out: Path) -> None:
    cc = find_tool("cc")
    cmd = [cc, "-shared", "-fPIC", "-O2", "-Wall", f"-I{header.parent}", *_glib_cflags(header)]
    proc = subprocess.run([*cmd, "-o", str(out), str(PLUGIN_SOURCE)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        first = next((ln for ln in proc.stdout.splitlines() if "error" in ln), proc.stdout.strip())
        raise UserError(f"building the QEMU plugin failed: {first}")


# --------------------------------------------------------------------------- profile


def parse_profile(text: str) -> Profile:
    """Parse the plugin's output (see insn_profile.c for the format)."""
    insns = taken = None
    blocks: list[Block] = []
    contexts: list[InContext] = []
    cur: tuple[int, int, int, int] | None = None  # addr, ninsns, execs, taken
    cur_insns: list[Insn] = []

    def close() -> None:
        if cur is None:
            return
        if len(cur_insns) != cur[1]:
            raise ValueError(f"profile: block 0x{cur[0]:x} lists {len(cur_insns)} of {cur[1]} insns")
        blocks.append(Block(addr=cur[0], insns=tuple(cur_insns), execs=cur[2], taken=cur[3]))

    for line in text.splitlines():
        if not line:
            continue
        kind, _, rest = line.partition(" ")
        if kind == "i":
            addr, size, *dis = rest.split(" ", 2)
            cur_insns.append(Insn(addr=int(addr, 16), size=int(size), text=dis[0] if dis else ""))
        elif kind == "tb":
            close()
            a, n, e, t = rest.split()
            cur = (int(a, 16), int(n), int(e), int(t))
            cur_insns = []
        elif kind == "c":
            ca, cn, a, n, e, t = rest.split()
            contexts.append(InContext(int(ca, 16), int(cn), int(a, 16), int(n), int(e), int(t)))
        elif kind == "insns":
            insns = int(rest)
        elif kind == "taken":
            taken = int(rest)
        else:
            raise ValueError(f"profile: unexpected line {line!r}")
    close()
    if insns is None or taken is None:
        raise ValueError("profile: missing 'insns'/'taken' header")
    return Profile(insns=insns, taken=taken, blocks=tuple(blocks), contexts=tuple(contexts))


def counter_to_insns(ticks: int, calib_ticks: int) -> int:
    """Instructions of the measured call from FPGAIO counter ticks (shift=7: 3.2 ticks/insn)."""
    return round(ticks / TICKS_PER_INSN) - round(calib_ticks / TICKS_PER_INSN) + 1


# --------------------------------------------------------------------------- running


def qemu_command(elf: Path, plugin_args: str | None = None) -> list[str]:
    """The qemu-system-arm command line.

    The firmware's semihosting console goes to a stdio chardev (QEMU 7.2 would
    otherwise write it to stderr, mixed with QEMU's own messages); SYS_EXIT_EXTENDED
    makes QEMU exit with the firmware's code.
    """
    cmd = [
        find_tool("qemu-system-arm"),
        "-M", MACHINE,
        "-nographic",
        "-monitor", "none",
        "-serial", "none",
        "-chardev", "stdio,id=semihost",
        "-semihosting-config", "enable=on,target=native,chardev=semihost",
        "-icount", ICOUNT,
        "-kernel", str(elf),
    ]  # fmt: skip
    if plugin_args is not None:
        cmd += ["-plugin", plugin_args]
    return cmd


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def _check_faults(stdout: str, elf: Path) -> None:
    """The harness's fault and instruction-limit lines (faults.py), or a plain handler's line."""
    fault = faults.parse(stdout)
    if fault:
        raise UserError(faults.describe(fault, faults.layout(elf)))
    limit = faults.parse_limit(stdout)
    if limit:
        where = faults.at(limit.pc, faults.layout(elf))
        raise LimitReached(f"the measured call did not return within the firmware's instruction limit "
                           f"(stopped at {where})", where)
    plain = _FAULT_RE.search(stdout)  # firmwares with a handler of their own (tests/data/qemu_smoke)
    if plain:
        raise UserError(f"{plain.group(0)} ({elf.name})")


def run(
    elf: Path,
    *,
    start: int,
    stop: int,
    method: str = "plugin",
    timeout: float = 60,
    ctx: tuple[int, int] | None = None,
) -> RunResult:
    """Run `elf` on mps2-an386 and count the instructions between `start` and `stop`.

    start/stop: addresses of the first instructions of the translation blocks that
    switch counting on (counted) and off (not counted), e.g. the measured function
    and the return address of its call.  Bit 0 (Thumb) is ignored.
    ctx: (lo, hi), the measured function's code: the profile also counts every block per
    context (Profile.contexts; see insn_profile.c).
    """
    elf = Path(elf)
    if not elf.is_file():
        raise UserError(f"firmware ELF not found: {elf}")
    if method not in ("plugin", "icount"):
        raise UserError(f"unknown measuring method {method!r} (use 'plugin' or 'icount')")
    start &= ~1
    stop &= ~1

    with tempfile.TemporaryDirectory(prefix="specializer-qemu-") as tmp:
        out = Path(tmp) / "profile.txt"
        plugin_args = None
        if method == "plugin":
            plugin_args = f"{ensure_plugin()},start=0x{start:x},stop=0x{stop:x},out={out}"
            if ctx is not None:
                plugin_args += f",ctx=0x{ctx[0] & ~1:x}-0x{ctx[1] & ~1:x}"
        cmd = qemu_command(elf, plugin_args)
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own process group: a hang is killed whole
        )
        try:
            stdout_b, stderr_b = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise Hang(
                f"firmware did not finish within {timeout:g} s (hang?): {elf.name} on {MACHINE}", timeout
            ) from None
        except BaseException:
            _kill_group(proc)
            raise
        stdout = stdout_b.decode("utf-8", errors="replace")
        stderr = stderr_b.decode("utf-8", errors="replace")
        code = proc.returncode

        _check_faults(stdout, elf)
        # QEMU's own failures (bad option, plugin error, CPU lockup "qemu: fatal: ...")
        qemu_errors = [
            ln
            for ln in stderr.splitlines()
            if ln.startswith(("qemu-system-arm:", "qemu: fatal:", "insn_profile:"))
        ]
        if qemu_errors:
            raise UserError(f"QEMU failed on {elf.name}: {qemu_errors[0]}")
        if code < 0:
            raise UserError(f"qemu-system-arm was killed by signal {-code} running {elf.name}")

        profile = None
        if method == "plugin":
            if not out.is_file():
                raise UserError(f"QEMU exited (code {code}) without writing the instruction profile")
            profile = parse_profile(out.read_text())

    counter = _COUNTER_RE.search(stdout)
    counter_insns = counter_to_insns(int(counter.group(1), 0), int(counter.group(2), 0)) if counter else None
    if method == "icount" and counter_insns is None:
        raise UserError(
            f"firmware {elf.name} printed no 'counter <ticks> <calib_ticks>' line (exit code {code})"
        )
    return RunResult(exit_code=code, stdout=stdout, profile=profile, counter_insns=counter_insns)
