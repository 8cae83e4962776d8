"""`specialize run FILE.ll --entry NAME`: a raw module's function on QEMU; its value, its faults,
its hangs, its stack overflow, and the static warnings before the run."""

import subprocess
import sys
from pathlib import Path

import pytest

from specializer.run import faults, rawrun, staticcheck

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]

MODULE = """\
target triple = "thumbv7em-none-eabihf"

@zero = global i32 0

define i32 @answer() {
  ret i32 42
}

define float @third() {
  %x = load volatile float, ptr @one
  %y = fdiv float %x, 3.0
  ret float %y
}
@one = global float 1.0

define i8 @minus_one() {
  ret i8 -1
}

define i32 @null_load() {
  %v = load i32, ptr null
  ret i32 %v
}

define i32 @spin() {
entry:
  br label %loop
loop:
  %v = load volatile i32, ptr @zero
  br label %loop
}

define i32 @rec(i32 %n) {
  %buf = alloca [16 x i32]
  store volatile i32 %n, ptr %buf
  %m = add i32 %n, 1
  %r = call i32 @rec(i32 %m)
  %v = load volatile i32, ptr %buf
  %s = add i32 %r, %v
  ret i32 %s
}

define i32 @deep() {
  %r = call i32 @rec(i32 0)
  ret i32 %r
}

define i32 @bus() {
  %v = load volatile i32, ptr inttoptr (i32 -268435456 to ptr)
  ret i32 %v
}

define i32 @div(i32 %a) noinline {
  %q = sdiv i32 100, %a
  ret i32 %q
}

define i32 @div_zero() {
  %z = load volatile i32, ptr @zero
  %q = call i32 @div(i32 %z)
  ret i32 %q
}

define void @use(ptr %p) noinline {
  store volatile i8 1, ptr %p
  ret void
}

define i32 @huge_frame() {
  %a = alloca [5000000 x i8]
  call void @use(ptr %a)
  ret i32 0
}

define { i32, i32 } @pair() {
  ret { i32, i32 } zeroinitializer
}
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory) -> Path:
    ll = tmp_path_factory.mktemp("raw") / "m.ll"
    ll.write_text(MODULE)
    return ll


def run(ll: Path, *args, cwd=None):
    return subprocess.run([*SPECIALIZE, "run", ll.name, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ll.parent)


def one_error_line(r) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("specialize: error: "), lines[0]
    return lines[0][len("specialize: error: "):]


def test_i32_return_value(module):
    r = run(module, "--entry", "answer")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    row = r.stdout.splitlines()[2]
    assert "| answer | i32 42 (0x0000002a) |" in row
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert int(cells[5]) >= 1 and int(cells[6]) >= int(cells[5])  # instructions, est. cycles


def test_float_return_value_json(module):
    import json

    r = run(module, "--entry", "third", "--json")
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["returns"] == "float"
    assert row["value"] == "0.3333333432674408 (bits 0x3eaaaaab)"  # float32(1/3), as a Python float
    assert row["insns"] > 0 and row["flash"] == row["text"] + row["rodata"] + row["data"] + row["lib_flash"]
    assert row["ram"] >= 4  # @one and @zero are .data/.bss


def test_null_load_warns(module):
    r = run(module, "--entry", "null_load")
    warnings = [ln for ln in r.stderr.splitlines() if "warning:" in ln]
    assert warnings == ["specialize: m.ll:21: warning: 'null_load' loads from a constant null pointer "
                        "(%v = load i32, ptr null, align 4): address 0 is mps2-an386's flash, QEMU does not "
                        "fault there, and LLVM may drop the access as undefined behaviour"]
    assert "Traceback" not in r.stderr


def test_infinite_loop_hits_the_instruction_limit(module):
    r = run(module, "--entry", "spin", "--max-insns", "100000")
    line = one_error_line(r)
    assert line.startswith("m.ll: 'spin' did not return within 100,000 instructions (--max-insns; stopped at PC 0x")
    assert " in spin+0x" in line


def test_infinite_loop_hits_the_time_limit_and_qemu_is_gone(module, tmp_path):
    keep = tmp_path / "keep"
    # the largest instruction limit, so the 1 s timeout comes first; a host fast enough to run
    # 1.3e9 instructions of a branch-to-self within it ends with the limit's line instead
    r = run(module, "--entry", "spin", "--timeout", "1", "--max-insns", "1342177271", "--keep", keep)
    line = one_error_line(r)
    assert line == "m.ll: 'spin' did not return within 1 seconds (--timeout); QEMU was stopped" \
        or line.startswith("m.ll: 'spin' did not return within 1,342,177,271 instructions (--max-insns"), line
    left = subprocess.run(["pgrep", "-f", str(keep)], capture_output=True, text=True)
    assert left.stdout == ""  # no QEMU running our firmware is left behind


def test_deep_recursion_is_a_stack_overflow(module):
    line = one_error_line(run(module, "--entry", "deep"))
    assert line.startswith("stack overflow: the call needs more than the ")
    assert "bytes of stack there are" in line and "4 MiB of RAM" in line


def test_bus_fault_names_function_and_address(module):
    line = one_error_line(run(module, "--entry", "bus"))
    assert line.startswith("hard fault at PC 0x")
    assert " in bus+0x" in line
    assert line.endswith("(BusFault: precise data bus error at address 0xf0000000)")


def test_division_by_zero_traps(module):
    line = one_error_line(run(module, "--entry", "div_zero"))
    assert " in div+0x" in line and line.endswith("(UsageFault: integer division by zero)")


def test_huge_frame_warns(module):
    r = run(module, "--entry", "huge_frame")
    warnings = [ln for ln in r.stderr.splitlines() if "warning:" in ln]
    assert len(warnings) == 1
    assert warnings[0].startswith("specialize: m.ll: warning: 'huge_frame' has a stack frame of 5,000,0")
    assert "the stack has " in warnings[0]


def test_unsupported_signature_is_refused(module):
    assert one_error_line(run(module, "--entry", "pair")) == (
        "m.ll: 'pair' has the signature { i32, i32 } (); run --entry calls a function with no arguments "
        "returning void, i1, i8, i16, i32, i64, float, double or ptr")
    assert one_error_line(run(module, "--entry", "rec")).startswith("m.ll: 'rec' has the signature i32 (i32);")


def test_missing_entry_lists_candidates(module):
    assert one_error_line(run(module, "--entry", "nope")) == (
        "m.ll: no function 'nope' is defined; functions with no arguments: answer, third, minus_one, null_load, "
        "spin, deep, bus, div_zero, huge_frame, pair")


def test_max_insns_out_of_range(module):
    assert "--max-insns 0: must be between 1 and " in one_error_line(run(module, "--entry", "answer",
                                                                         "--max-insns", "0"))


def test_max_insns_needs_entry(module):
    assert one_error_line(run(module, "--max-insns", "10")) == "--max-insns applies to --entry runs only"


def test_raw_module_without_entry_points_to_it(tmp_path):
    ll = tmp_path / "m.ll"
    ll.write_text(MODULE)
    assert "--entry NAME" in one_error_line(run(ll))


# ---- the pieces, without QEMU ----

def _regs(r0=0, r1=0, s0=0, s1=0) -> str:
    return f"return 0x{r0:08x} 0x{r1:08x}\nreturn-fp 0x{s0:08x} 0x{s1:08x}\n"


def test_decode_return_registers():
    assert rawrun.decode(_regs(r0=0xFFFFFFFF), "i8") == "-1 (0xff)"
    assert rawrun.decode(_regs(r0=0x1234FF80), "i8") == "-128 (0x80)"  # bits above the value are junk
    assert rawrun.decode(_regs(r0=3), "i1") == "1"
    assert rawrun.decode(_regs(r0=0x00000001, r1=0x80000000), "i64") == "-9223372036854775807 (0x8000000000000001)"
    assert rawrun.decode(_regs(s0=0, s1=0x40090000), "double") == "3.125 (bits 0x4009000000000000)"
    assert rawrun.decode(_regs(r0=0x20000010), "ptr") == "0x20000010"
    assert rawrun.decode(_regs(), "void") is None


LAYOUT = faults.Layout(functions=((0x100, 0x120, "f"),), guard=(0x20000800, 0x20000C00),
                       stack=(0x20000C00, 0x20400000), ram_origin=0x20000000)


def test_fault_decoding():
    def line(cfsr, pc=0x108, mmfar=0, bfar=0, psp=0x203FFF00, hfsr=1 << 30):
        f = faults.parse(f"fault 0x00000003 0x{pc:08x} 0x{cfsr:08x} 0x{hfsr:08x} 0x{mmfar:08x} 0x{bfar:08x} "
                         f"0x{psp:08x}\n")
        return faults.describe(f, LAYOUT)

    assert line(1 << 16) == "hard fault at PC 0x00000108 in f+0x8 (UsageFault: undefined instruction)"
    assert line(1 << 24) == ("hard fault at PC 0x00000108 in f+0x8 (UsageFault: unaligned access "
                             "(LDRD/STRD/LDM/STM need word alignment))")
    assert line((1 << 9) | (1 << 15), bfar=0x40100000) == (
        "hard fault at PC 0x00000108 in f+0x8 (BusFault: precise data bus error at address 0x40100000)")
    assert line((1 << 1) | (1 << 7), mmfar=0x10) == (
        "hard fault at PC 0x00000108 in f+0x8 (MemManage: data access violation at address 0x00000010)")
    assert line(0, pc=0x400, hfsr=1 << 1) == ("hard fault at PC 0x00000400 (HardFault: bus error reading the "
                                               "vector table)")
    # a push into the guard: a stack overflow, whatever the stacked PC says
    assert line((1 << 1) | (1 << 7) | (1 << 4), pc=0xFFFFFFFF, mmfar=0x20000BFC, psp=0x20000BE0).startswith(
        "stack overflow: the call needs more than the 4,191,232 bytes of stack there are; mps2-an386 has 4 MiB")
    assert faults.parse("limit 0x00000108\n") is None and faults.parse_limit("limit 0x00000108\n") == faults.Limit(0x108)


def test_frame_sizes_from_unwind_directives():
    asm = ("f:\n\t.fnstart\n\t.save\t{r4, r5, r6, r7, lr}\n\tpush\t{r4, r5, r6, r7, lr}\n\t.vsave\t{d8, d9}\n"
           "\t.pad\t#4980736\n\t.pad\t#64\n.LBB0_1:\n\t.pad\t#8\n\t.fnend\n"
           "g:\n\t.fnstart\n\t.save\t{r4-r11, lr}\n\t.fnend\nh:\n\t.fnstart\n\tbx\tlr\n\t.fnend\n")
    assert staticcheck.frame_sizes(asm) == {"f": 20 + 16 + 4980736 + 64 + 8, "g": 36}
    assert staticcheck.large_frames(asm, 4 << 20, "m.ll")[0].startswith(
        "m.ll: warning: 'f' has a stack frame of 4,980,844 bytes; the stack has 4,194,304")
