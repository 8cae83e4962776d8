"""specializer.run.qemu on a tiny assembly firmware (tests/data/qemu_smoke), built here.

The firmware calls work() -- a loop of exactly 2*LOOP_ITERS + 2 instructions --
between two reads of the FPGAIO counter, then a one-instruction calib(), prints
`counter <ticks> <calib_ticks>` and exits through semihosting.  The plugin's
window is start=work .. stop=after_call (the return address of the call).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from specializer.run import qemu
from specializer.errors import UserError
from specializer.target import TARGET
from specializer.tools import find_tool

SRC = Path(__file__).parent / "data" / "qemu_smoke"
CFLAGS = TARGET.arch_flags() + ["-nostdlib", "-ffreestanding", "-O2"]


def build(tmp: Path, name: str, *defines: str) -> tuple[Path, dict[str, int]]:
    """Build the smoke firmware with -D`defines`; return the ELF and its symbols."""
    elf = tmp / f"{name}.elf"
    subprocess.run(
        [
            find_tool("arm-none-eabi-gcc"), *CFLAGS, *(f"-D{d}" for d in defines),
            "-T", str(SRC / "link.ld"), "-o", str(elf),
            str(SRC / "startup.S"), str(SRC / "main.c"),
        ],
        check=True,
    )  # fmt: skip
    with elf.open("rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        syms = {s.name: s["st_value"] for s in symtab.iter_symbols() if s.name}
    return elf, syms


def window(syms: dict[str, int]) -> dict[str, int]:
    return {"start": syms["work"], "stop": syms["after_call"]}


def expected_insns(syms: dict[str, int]) -> int:
    # work: ldr =LOOP_ITERS (1; gas may emit mov.w) + LOOP_ITERS * (subs, bne) + bx lr (1)
    return 2 * syms["LOOP_ITERS_VALUE"] + 2


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return build(tmp_path_factory.mktemp("fw"), "smoke")


def test_exit_code_passes_through(tmp_path):
    elf, syms = build(tmp_path, "exit7", "EXIT_CODE=7")
    res = qemu.run(elf, method="icount", timeout=30, **window(syms))
    assert res.exit_code == 7
    assert res.profile is None
    assert res.stdout.startswith("counter ")


def test_plugin_counts_loop_exactly(smoke):
    elf, syms = smoke
    n = expected_insns(syms)
    assert n == 2002
    res = qemu.run(elf, method="plugin", timeout=30, **window(syms))
    assert res.exit_code == 0
    prof = res.profile
    assert prof is not None
    assert prof.insns == n
    # every bne but the last is taken, and bx lr returns to after_call: 1000 taken
    assert prof.taken == syms["LOOP_ITERS_VALUE"]
    assert sum(b.execs * len(b.insns) for b in prof.blocks) == n
    assert sum(b.taken for b in prof.blocks) == prof.taken
    work = syms["work"] & ~1
    assert [b.addr for b in prof.blocks] == sorted(b.addr for b in prof.blocks)
    assert prof.blocks[0].addr == work and prof.blocks[0].execs == 1
    assert all(work <= i.addr < syms["calib"] for b in prof.blocks for i in b.insns)
    texts = [i.text for b in prof.blocks for i in b.insns]
    assert any(t.startswith("bne") for t in texts) and any(t.startswith("bx") for t in texts)
    for b in prof.blocks:  # each block's instructions are contiguous, Thumb sizes
        assert b.insns[0].addr == b.addr
        assert all(i.size in (2, 4) for i in b.insns)
        assert all(x.addr + x.size == y.addr for x, y in zip(b.insns, b.insns[1:]))


def test_icount_counter_agrees_with_plugin(smoke):
    elf, syms = smoke
    res = qemu.run(elf, method="icount", timeout=30, **window(syms))
    assert res.exit_code == 0 and res.profile is None
    assert res.counter_insns == expected_insns(syms)
    # the plugin run has -icount too, so it carries the counter as well
    res_p = qemu.run(elf, method="plugin", timeout=30, **window(syms))
    assert res_p.counter_insns == res_p.profile.insns == res.counter_insns


@pytest.mark.parametrize("iters", [1, 7, 12345])
def test_counts_for_other_loop_lengths(tmp_path, iters):
    elf, syms = build(tmp_path, f"loop{iters}", f"LOOP_ITERS={iters}")
    n = expected_insns(syms)
    assert n == 2 * iters + 2
    assert qemu.run(elf, method="plugin", timeout=30, **window(syms)).profile.insns == n
    assert qemu.run(elf, method="icount", timeout=30, **window(syms)).counter_insns == n


def test_runs_are_deterministic(smoke):
    elf, syms = smoke
    a = qemu.run(elf, method="plugin", timeout=30, **window(syms))
    b = qemu.run(elf, method="plugin", timeout=30, **window(syms))
    assert a == b


def test_hard_fault_reports_pc(tmp_path):
    elf, syms = build(tmp_path, "fault", "FAULT")
    pc = syms["fault_insn"] & ~1
    with pytest.raises(UserError, match=rf"hard fault at PC 0x{pc:08x}\b"):
        qemu.run(elf, method="plugin", timeout=30, **window(syms))


def test_hang_times_out(tmp_path):
    elf, syms = build(tmp_path, "hang", "HANG")
    with pytest.raises(UserError, match=r"did not finish within 2 s \(hang\?\)"):
        qemu.run(elf, method="icount", timeout=2, **window(syms))


def test_profile_parser_roundtrip():
    text = (
        "insns 5\ntaken 1\n"
        "tb 0x10 2 2 1\ni 0x10 2 subs r0, #1\ni 0x12 2 bne #0x10\n"
        "tb 0x14 1 1 0\ni 0x14 2 bx lr\n"
    )
    p = qemu.parse_profile(text)
    assert p.insns == 5 and p.taken == 1
    assert [(b.addr, len(b.insns), b.execs, b.taken) for b in p.blocks] == [(0x10, 2, 2, 1), (0x14, 1, 1, 0)]
    assert p.blocks[0].insns[0] == qemu.Insn(0x10, 2, "subs r0, #1")
    assert qemu.counter_to_insns(6413, 9) == 2002
