"""`specialize bundle`: the bundle links into a plain C program with newlib and runs on QEMU."""

import re
import subprocess
import sys

import pytest
from elftools.elf.elffile import ELFFile

from specializer.driver import bundle as bundle_mod
from specializer import cli, inputs
from specializer.run import measure, qemu
from specializer.capture.manifest import Manifest
from specializer.tools import find_tool

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]


def globals_of(obj):
    """(defined global symbols, undefined symbols) of an object."""
    with open(obj, "rb") as f:
        syms = list(ELFFile(f).get_section_by_name(".symtab").iter_symbols())
    defined = {s.name for s in syms if s["st_info"]["bind"] == "STB_GLOBAL" and s["st_shndx"] != "SHN_UNDEF"}
    undefined = {s.name for s in syms if s.name and s["st_shndx"] == "SHN_UNDEF"}
    return defined, undefined


def link_and_run(b, tmp_path):
    """docs/user-guide.md's commands: gcc links main.c + the bundle with newlib (rdimon), QEMU runs it."""
    elf = tmp_path / "model.elf"
    for cmd in bundle_mod.link_commands(b, str(elf)):
        cmd = [find_tool(cmd[0]), "-Wall", "-Wextra", "-Werror", *cmd[1:]]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    r = subprocess.run(qemu.qemu_command(elf), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, (r.stdout[-500:], r.stderr[-500:])
    return r.stdout


@pytest.mark.parametrize("name,variant", [("mlp", "all-args"), ("elementwise", "all-args"), ("mlp", "separate")])
def test_bundle_links_into_c_program_and_matches_jax_on_qemu(captured, tmp_path, name, variant):
    c = captured(name)
    out = tmp_path / "bundle"
    assert cli.main(["bundle", str(c.model_ll), "-o", str(out), "--variant", variant, "-q"]) == 0
    m = Manifest.load(c.manifest_json)
    b = bundle_mod.bundle(inputs.load(c.model_ll), out, variant)  # the same again, for the dataclass
    for f in (b.object, b.library, b.header, b.main, out / "qemu" / "startup.S", out / "qemu" / "link.ld"):
        assert f.is_file(), f

    # exports exactly the entry and its I/O buffers (nothing of libjit/CMSIS a firmware could clash with)
    defined, undefined = globals_of(b.object)
    assert defined == set(measure.roots(m))
    assert set(b.undefined) == undefined
    assert not any(s.startswith(("harness_", "libjit_", "arm_")) for s in undefined)
    head = b.header.read_text()
    assert f"void {m.entry}(void);" in head
    listed = re.search(r"newlib: -lm -lc -lgcc\): ([^.]*)\.", head.replace("\n * ", " ")).group(1)
    assert listed == (", ".join(sorted(undefined)) or "none")
    assert f"#define {name.upper()}_FLASH_BYTES {b.footprint.flash}u" in head
    assert b.row is not None and b.row.stack > 0
    assert f"#define {name.upper()}_RAM_BYTES {b.footprint.static_ram + b.row.stack}u" in head
    if name == "elementwise":
        assert "logf" in undefined  # newlib's, left to the firmware's toolchain

    got = bundle_mod.read_printed(link_and_run(b, tmp_path), m)
    max_abs, max_rel, ok = measure.errors(got, m)
    assert ok, (max_abs, max_rel)
    assert any(abs(v) > 0 for t in got for v in t.reshape(-1).tolist())


def test_bundle_is_byte_identical_run_to_run(captured, tmp_path):
    c = captured("mlp")
    for d in ("a", "b"):
        assert cli.main(["bundle", str(c.model_ll), "-o", str(tmp_path / d), "-q"]) == 0
    names = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(names) == 6
    for n in names:
        assert (tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes(), n


def test_bundle_of_a_module_without_manifest_is_one_line(tmp_path):
    ll = tmp_path / "plain.ll"
    ll.write_text('target triple = "thumbv7em-unknown-none-eabihf"\n'
                  "define void @f() {\n  ret void\n}\n")
    out = tmp_path / "out"
    r = subprocess.run([*SPECIALIZE, "bundle", str(ll), "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "not a captured model" in lines[0] and "specialize capture" in lines[0] and str(ll) in lines[0]
    assert not out.exists()


def test_help_bundle_lists_its_options(capsys):
    assert cli.main(["help", "bundle"]) == 0
    text = capsys.readouterr().out
    for opt in ("--variant", "-o", "--no-run", "rdimon.specs", "qemu-system-arm"):
        assert opt in text
