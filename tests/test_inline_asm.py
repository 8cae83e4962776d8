"""specializer.library.inline_asm: CMSIS-NN's inline-asm DSP instructions become LLVM's ARM intrinsics
(the IR: tests/ir/inline_asm_*.ll, tests/test_ir.py), leftovers are named, and the rewritten code
computes what the assembled asm computes on QEMU's Cortex-M4 (no CMSIS-NN checkout needed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_cmsis_nn import BINARY, DATA, M32, TERNARY, UNARY, run_firmware


from specializer.llvm import emit, module, transforms
from specializer.library import inline_asm, libjit
from specializer.errors import UserError
from specializer.tools import find_tool

IR = Path(__file__).parent / "ir"


def test_cmsis_nn_forms_become_intrinsics():
    case = IR / "inline_asm_cmsis_nn.ll"
    raw = case.read_text()
    out = inline_asm.rewrite(raw)
    assert out.count == 15
    assert inline_asm.leftover(out.text) == []
    # the ARM backend selects it: an object comes out (asm would abort LLVM here)
    assert emit.emit_object(module.parse(out.text, case.name))
    assert inline_asm.rewrite(out.text) == inline_asm.Rewritten(out.text, 0)  # nothing left to do


LEFTOVERS = """\
define void @mve_memset(ptr %p, i32 %n) {
  %1 = call ptr asm sideeffect "   vdup.8 q0, $2\\0A   wlstp.8 lr, $1, 1f\\0A", "=r,r,r,0,~{q0},~{memory}"(i32 %n, i32 0, ptr %p)
  ret void
}

define i32 @\"non-constant rotation\"(i32 %a, i32 %b) {
  %r = tail call i32 asm sideeffect "sxtb16 $0, $1, ROR $2", "=r,r,r"(i32 %a, i32 %b)
  ret i32 %r
}

define i32 @unknown_mnemonic(i32 %a) {
  %r = call i32 asm "rbit $0, $1", "=r,r"(i32 %a)
  ret i32 %r
}

define i32 @pkhbt_out_of_range(i32 %a, i32 %b) {
  %r = call i32 asm "pkhbt $0, $1, $2, lsl $3", "=r,r,r,I"(i32 %a, i32 %b, i32 32)
  ret i32 %r
}

define i32 @fine(i32 %a) {
  %r = call i32 asm "sxtb16 $0, $1", "=r,r"(i32 %a)
  ret i32 %r
}
"""


def test_what_cannot_be_rewritten_is_named():
    out = inline_asm.rewrite(LEFTOVERS)
    assert out.count == 1  # only @fine
    left = inline_asm.leftover(out.text)
    assert [x.function for x in left] == ["mve_memset", "non-constant rotation", "unknown_mnemonic",
                                          "pkhbt_out_of_range"]  # fmt: skip
    assert left[2].template == "rbit $0, $1"
    assert inline_asm.leftover('module asm ".globl x"\n') == [inline_asm.Leftover("(module level)", ".globl x")]


def test_library_build_refuses_leftover_asm_in_one_line(tmp_path, monkeypatch):
    src = tmp_path / "k"
    src.mkdir()
    (src / "bad.c").write_text(
        "unsigned libjit_bad(unsigned a) { unsigned r; __asm(\"rbit %0, %1\" : \"=r\"(r) : \"r\"(a)); return r; }\n")
    monkeypatch.setattr(libjit, "build_dir", lambda: tmp_path / "build")
    monkeypatch.delenv("SPECIALIZER_CMSIS_NN", raising=False)
    with pytest.raises(UserError) as e:
        libjit.build(src_dir=src)
    msg = str(e.value)
    assert "\n" not in msg and "bad.c" in msg and "libjit_bad" in msg and "rbit" in msg


# =========================================================================== on QEMU


def _link(tmp: Path, name: str, objs: list[Path]) -> Path:
    clang = find_tool("clang-19")
    io = tmp / "io.o"
    if not io.exists():
        subprocess.run([clang, *libjit.CFLAGS, f"-I{DATA}", *libjit._newlib_include(), "-c", str(DATA / "io.c"),
                        "-o", str(io)], check=True)  # fmt: skip
    elf = tmp / f"{name}.elf"
    subprocess.run([find_tool("arm-none-eabi-gcc"), "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                    "-mfpu=fpv4-sp-d16", "-nostartfiles", "-T", str(DATA / "link.ld"), "-Wl,--gc-sections",
                    str(DATA / "startup.S"), *map(str, objs), str(io), "-lc", "-lgcc", "-o", str(elf)],
                   check=True)  # fmt: skip
    return elf


def test_rewritten_asm_matches_assembled_asm_on_cortex_m4(tmp_path):
    src = DATA / "asm_forms.c"
    clang = find_tool("clang-19")
    flags = [*libjit.CFLAGS, f"-I{DATA}", *libjit._newlib_include()]
    # the reference: clang assembles the inline asm itself
    asm_obj = tmp_path / "asm_forms.o"
    subprocess.run([clang, *flags, "-c", str(src), "-o", str(asm_obj)], check=True)
    # the rewrite: IR text -> intrinsics -> llvmlite's LLVM (no ARM assembler) -> object
    text = subprocess.run([clang, *flags, "-S", "-emit-llvm", str(src), "-o", "-"], check=True,
                          capture_output=True, text=True).stdout  # fmt: skip
    assert " asm " in text
    out = inline_asm.rewrite(text)
    assert inline_asm.leftover(out.text) == []
    mod = module.parse(out.text, "asm_forms.ll")
    transforms.optimize(mod)
    ir_obj = tmp_path / "rewritten.o"
    ir_obj.write_bytes(emit.emit_object(mod))

    want = run_firmware(_link(tmp_path, "assembled", [asm_obj]))
    got = run_firmware(_link(tmp_path, "rewritten", [ir_obj]))
    assert got == want
    # and both are the Arm semantics (the Python models of test_cmsis_nn)
    v = want.pop("values")
    n = len(v)
    ops = 0
    for name, res in want.items():
        if name in UNARY:
            expect = [UNARY[name](a) & M32 for a in v]
        elif name in BINARY:
            expect = [BINARY[name](a, b) & M32 for a in v for b in v]
        else:
            expect = [TERNARY[name](v[i], v[j], v[(i + j) % n]) & M32 for i in range(n) for j in range(n)]
        assert res == expect, name
        ops += 1
    assert ops == 48


# =========================================================================== a module given to specialize

MODULE = """target triple = "thumbv7em-unknown-none-eabihf"

define i32 @dsp(i32 %a, i32 %b, i32 %c) {
  %1 = tail call i32 asm sideeffect "smlad $0, $1, $2, $3", "=r,r,r,r"(i32 %a, i32 %b, i32 %c)
  %2 = tail call i32 asm "BODY", "=r,r"(i32 %1)
  ret i32 %2
}
"""


def test_module_with_dsp_asm_is_specialized(tmp_path):
    from test_bad_input import run_cli

    ll = tmp_path / "dsp.ll"
    ll.write_text(MODULE.replace("BODY", "sxtb16 $0, $1"))
    out = tmp_path / "o.ll"
    r = run_cli("--all-args", ll, "-S", "-o", out)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "@llvm.arm.smlad" in text and "@llvm.arm.sxtb16" in text and " asm " not in text


def test_module_with_other_asm_is_one_line_error(tmp_path):
    from test_bad_input import assert_one_line_error, run_cli

    ll = tmp_path / "rbit.ll"
    ll.write_text(MODULE.replace("BODY", "rbit $0, $1"))
    assert_one_line_error(run_cli("--all-args", ll, "-S", "-o", tmp_path / "o.ll"), str(ll), "'dsp'", "rbit $0, $1")
