"""The profile tied to the model: hlo.json from capture, line-table debug info that leaves the
code alone, every row of the model's own code naming its HLO instruction and source line."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from specializer.llvm import module
from specializer.driver.profile import profile_model
from specializer.driver.run import run_model, runnable
from specializer.run import debuginfo

from specializer.capture import hlo_sites

from specializer.optimize import variants
from specializer.capture.capture import capture

# three distinct ops: an elementwise fusion (tanh), a dot (a library call), and a fusion of
# max/exp/sub; XLA's small kernels are inlined into the entry by the lto build
MODEL = """\
import jax.numpy as jnp, numpy as np

def model(x, w):
    h = jnp.tanh(x * 2.0 + 1.0)
    y = h @ w
    return jnp.maximum(y, 0.0) - jnp.exp(y * 0.1)

model.example_inputs = {"x": np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 32)}
model.weights = {"w": np.arange(32 * 8, dtype=np.float32).reshape(32, 8) / 256.0 - 0.5}
"""
LINES = {"tanh": 4, "dot_general": 5, "sub": 6, "max": 6, "exp": 6, "mul": 4, "add": 4}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("hloprof")
    src = d / "three_ops.py"
    src.write_text(MODEL)
    return capture(src, "model", d / "out"), src


@pytest.fixture(scope="module")
def profiled(model, tmp_path_factory):
    c, _ = model
    d = tmp_path_factory.mktemp("prof")
    return profile_model(c.model_ll, d / "prof", mca=True), d / "prof"


def _source_line(op_source: str, src: Path) -> int:
    file, line = op_source.rsplit(":", 1)
    assert Path(file).resolve() == src.resolve(), op_source
    return int(line)


def test_capture_writes_hlo_for_every_call(model):
    c, src = model
    h = hlo_sites.load(c.model_ll.with_name("hlo.json"))
    callees = [callee for callee, _ in h.calls]
    assert "libjit_matmul_f32" in callees and len(callees) == 3, h.calls
    for callee, name in h.calls:
        op = h.ops[name]
        assert op.op_name.startswith("jit(model)/"), op
        kind = op.op_name.rsplit("/", 1)[1]
        assert _source_line(op.source, src) == LINES[kind], op
    dot = h.ops[dict(h.calls)["libjit_matmul_f32"]]
    assert dot.opcode == "dot" and dot.op_name == "jit(model)/dot_general"
    fusions = [h.ops[n] for _, n in h.calls if h.ops[n].opcode == "fusion"]
    assert fusions and all(f.fused for f in fusions)  # the instructions inside each fusion
    assert {f.opcode for fu in fusions for f in fu.fused} >= {"tanh", "exponential", "maximum"}


def test_every_row_of_the_model_names_its_hlo_and_source(model, profiled):
    c, src = model
    p, _ = profiled
    assert p.row.status == "pass"
    own = [r for r in p.rows if r.kind in ("kernel", "call")]
    assert len(own) == 3, p.rows
    for r in own:
        assert r.hlo and r.op_name.startswith("jit(model)/"), r
        assert _source_line(r.source, src) == LINES[r.op_name.rsplit("/", 1)[1]], r
    # library code (libm's tanhf, expf) is charged to the op whose code called it
    lib = [r for r in p.rows if r.kind == "library"]
    assert lib and all(r.hlo and r.source for r in lib), lib
    # the rows add up to the run
    assert sum(r.insns for r in p.rows) == p.row.insns
    assert sum(r.cycles for r in p.rows) == p.row.cycles
    entry = [r for r in p.rows if r.kind == "entry"]
    assert sum(r.cycles for r in entry) < 0.05 * p.row.cycles


def test_inlined_kernel_code_is_still_its_kernels(profiled):
    p, d = profiled
    with open(d / "firmware.elf", "rb") as f:
        symbols = {s.name for s in ELFFile(f).get_section_by_name(".symtab").iter_symbols()}
    kernels = [r for r in p.rows if r.kind == "kernel"]
    inlined = [r for r in kernels if r.kernel not in symbols]
    assert inlined, "expected an XLA kernel inlined into the entry"
    assert all(r.insns > 0 and r.cycles > 0 for r in inlined)


def _code(path):
    with open(path, "rb") as f:
        e = ELFFile(f)
        return {s.name: s.data() for s in e.iter_sections() if s.name.startswith((".text", ".model.text"))}


def test_debug_info_leaves_the_code_alone(model, profiled, tmp_path):
    """The same build without debug info (the linked module printed and parsed again, as the
    profile's build does) has the same code bytes; the debug sections take no flash."""
    c, _ = model
    p, d = profiled
    built = variants.build(runnable(c.model_ll), "lto", tmp_path / "nodebug", annotate=lambda text: text)
    assert _code(built.objects[0]) == _code(d / "model.o")
    with open(d / "model.o", "rb") as f:
        assert ELFFile(f).get_section_by_name(".debug_line") is not None
    with open(built.objects[0], "rb") as f:
        assert ELFFile(f).get_section_by_name(".debug_line") is None


def test_profile_run_measures_what_run_measures(model, profiled, tmp_path):
    c, _ = model
    p, d = profiled
    row, _ = run_model(c.model_ll, tmp_path / "plain")
    assert _code(tmp_path / "plain" / "firmware.elf") == _code(d / "firmware.elf")
    assert row == p.row  # flash, RAM, instructions, cycles: the debug sections are not counted


def test_mca_estimate_present_and_positive(profiled):
    p, _ = profiled
    assert all(r.mca_cycles is not None for r in p.rows)
    assert all(r.mca_cycles > 0 for r in p.rows if r.insns > 10), p.rows
    assert sum(r.mca_cycles for r in p.rows) > 0


def test_profile_files_fit_and_are_complete(profiled):
    p, d = profiled
    text = (d / "profile.txt").read_text()
    assert max(len(line) for line in text.splitlines()) <= 100, text
    rows = json.loads((d / "profile.json").read_text())
    assert [r["kernel"] for r in rows] == [r.kernel for r in p.rows]
    call = next(r for r in rows if r["kind"] == "call")
    assert call["hlo"][0]["opcode"] == "dot" and call["hlo"][0]["op_name"] == "jit(model)/dot_general"


def test_cli_profile(model, tmp_path):
    c, _ = model
    run = subprocess.run([sys.executable, "-m", "specializer.cli", "run", str(c.model_ll), "--profile"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "dot_general" in run.stdout and "three_ops.py:5" in run.stdout
    assert max(len(line) for line in run.stdout.splitlines()) <= 100
    bad = subprocess.run([sys.executable, "-m", "specializer.cli", "run", str(c.model_ll), "--mca"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--profile" in bad.stderr


SMALL = """\
target triple = "thumbv7em-unknown-none-eabihf"

define internal float @k(float %x) {
entry:
  %c = fcmp olt float %x, 0.0
  br i1 %c, label %neg, label %done
neg:
  %n = fneg float %x
  br label %done
done:
  %r = phi float [ %n, %neg ], [ %x, %entry ]
  switch i32 0, label %out [
    i32 1, label %out
  ]
out:
  ret float %r
}

define float @f_run(float %x) {
  %a = call float @k(float %x)
  %b = call float @lib(float %a)
  ret float %b
}

declare float @lib(float)
"""


def test_attach_marks_every_instruction_and_verifies():
    text, sites, of_fn = debuginfo.attach(SMALL, ["k", "f_run"], "f_run", (("k", "abs.1"), ("lib", "dot.2")), "f.hlo")
    mod = module.parse(text, "small.ll")  # parses and verifies
    assert [(s.line, s.kernel, s.hlo, s.call) for s in sites] == [
        (1, "f_run", (), False), (2, "k", ("abs.1",), False), (3, "lib", ("dot.2",), True)]
    assert of_fn == {"f_run": 1, "k": 2}
    # every instruction; a switch's location goes after its closing bracket
    body = [ln for ln in text.splitlines() if ln.startswith("  ") and not ln.startswith("    i32")
            and not ln.endswith("[")]
    assert len(body) == 10 and all("!dbg !" in ln for ln in body), body
    assert re.search(r"call float @lib\(float %a\), !dbg !(\d+)", text)
    lines = {int(m.group(1)) for m in re.finditer(r"DILocation\(line: (\d+)", str(mod))}
    assert lines == {1, 2, 3}


def test_frames_resolve_to_the_innermost_file_and_line():
    text = ('HloModule m\n\nFileNames\n1 "/a/model.py"\n2 "/b/lib.py"\n\nFunctionNames\n1 "f"\n\n'
            "FileLocations\n1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=1 end_column=2}\n"
            "2 {file_name_id=2 function_name_id=1 line=40 end_line=40 column=1 end_column=2}\n\n"
            "StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n2 {file_location_id=2 parent_frame_id=1}\n\n"
            "ENTRY %main () -> f32[] {\n}\n")
    assert hlo_sites.frames(text) == {1: "/a/model.py:7", 2: "/b/lib.py:40"}


def test_profile_is_byte_identical_run_to_run(model, profiled, tmp_path):
    c, _ = model
    _, d = profiled
    profile_model(c.model_ll, tmp_path / "again", mca=True)
    for name in ("profile.txt", "profile.json"):
        assert (tmp_path / "again" / name).read_bytes() == (d / name).read_bytes(), name


def test_frames_prefer_the_model_file():
    # a chain 1 <- 2 <- 3 (the dump prints each parent one above its id): the op was made in
    # lib.py, called from the model's line 12
    text = ('FileNames\n1 "/a/model.py"\n2 "/b/lib.py"\n\n'
            "FileLocations\n1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=2}\n"
            "2 {file_name_id=1 function_name_id=1 line=12 end_line=12 column=1 end_column=2}\n"
            "3 {file_name_id=2 function_name_id=1 line=40 end_line=40 column=1 end_column=2}\n\n"
            "StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n2 {file_location_id=2 parent_frame_id=2}\n"
            "3 {file_location_id=3 parent_frame_id=3}\n\n")
    assert hlo_sites.frames(text)[3] == "/b/lib.py:40"
    assert hlo_sites.frames(text, "/a/model.py") == {1: "/a/model.py:3", 2: "/a/model.py:12", 3: "/a/model.py:12"}
