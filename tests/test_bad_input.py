"""Bad input: one plain line on stderr, non-zero exit, no traceback, no half-written output."""

import subprocess
import sys
from pathlib import Path

import pytest

from specializer.llvm import emit, module
from specializer import tools
from specializer.errors import UserError

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]


def run_cli(*args, cwd=None):
    return subprocess.run([*SPECIALIZE, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def assert_one_line_error(r, *fragments):
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


def test_unsupported_op_names_op_and_hlo_name(tmp_path):
    src = tmp_path / "sorter.py"
    src.write_text("import jax.numpy as jnp\nimport numpy as np\n"
                   "def sorter(x):\n    return jnp.sort(x)\n"
                   "sorter.example_inputs = {'x': np.arange(8, dtype=np.float32)[::-1].copy()}\n")
    out = tmp_path / "out"
    r = run_cli("capture", f"{src}:sorter", "-o", out)
    assert_one_line_error(r, "unsupported op", "HLO instruction 'sort", "f32[8]")
    assert not out.exists()  # nothing half-written


def test_unparsable_ll_reports_line_and_column(tmp_path):
    ll = tmp_path / "model.ll"
    ll.write_text("define void @f() {\n  ret i32 %nope\n}\n")
    r = run_cli(ll)
    assert_one_line_error(r, f"{ll}:2:")


def test_missing_tool_names_debian_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(UserError, match=r"apt-get install qemu-system-arm"):
        tools.find_tool("qemu-system-arm")


def test_missing_tool_from_cli(tmp_path, captured):
    c = captured("quadratic")
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path)}
    r = subprocess.run([*SPECIALIZE, c.model_ll], capture_output=True, text=True, env=env)
    assert_one_line_error(r, "apt-get install")


def test_wrong_target_ll(tmp_path):
    ll = tmp_path / "x86.ll"
    ll.write_text('target triple = "x86_64-unknown-linux-gnu"\ndefine void @f() {\n  ret void\n}\n')
    r = run_cli(ll)
    assert_one_line_error(r, "x86_64-unknown-linux-gnu")


def test_bad_capture_target(tmp_path):
    r = run_cli("capture", tmp_path / "nothere.py:f", "-o", tmp_path / "o")
    assert_one_line_error(r, "no such file")


def test_faulting_model_reports_pc(tmp_path, captured):
    """A model whose entry faults: the harness reports the PC, the CLI says so in one line."""
    c = captured("quadratic")
    text = c.model_ll.read_text().replace(
        "define void @quadratic_run() {\nentry:\n",
        "define void @quadratic_run() {\nentry:\n  store volatile i32 0, ptr inttoptr (i32 -16 to ptr)\n")
    bad = tmp_path / "model.ll"
    bad.write_text(text)
    (tmp_path / "model.json").write_text(c.manifest_json.read_text())
    r = run_cli(bad, "--variants", "lto")  # one build shows it; every variant runs the same harness
    assert_one_line_error(r, "hard fault at PC 0x")


def test_hanging_model_times_out(tmp_path, captured):
    c = captured("quadratic")
    text = c.model_ll.read_text().replace(
        "define void @quadratic_run() {\nentry:\n",
        "define void @quadratic_run() {\nentry:\n  br label %spin\nspin:\n"
        "  %v = load volatile i32, ptr @quadratic_in_a\n  br label %spin\nafter:\n")
    bad = tmp_path / "model.ll"
    bad.write_text(text)
    (tmp_path / "model.json").write_text(c.manifest_json.read_text())
    # one build is enough to time out: every variant's run is the same QEMU call
    r = run_cli(bad, "--timeout", "3", "--variants", "lto")
    assert_one_line_error(r, "did not finish")


# ---- .ll input that is not what it should be: one line each (docs/user-guide.md's "Bad input" table) ----


from specializer import inputs  # noqa: E402
from specializer.llvm import isolate, triples  # noqa: E402
from specializer.cli import main  # noqa: E402
from specializer.capture.manifest import Manifest, Tensor  # noqa: E402
from specializer.run.measure import errors  # noqa: E402
from specializer.run.firmware import overflow_message  # noqa: E402
from specializer.target import TARGET  # noqa: E402

OURS = b'target triple = "thumbv7em-none-eabihf"\n'
FN = b"define i32 @f(i32 %a) {\n  %b = add i32 %a, 1\n  ret i32 %b\n}\n"


def _nested(depth: int) -> bytes:
    ty = "i32"
    for _ in range(depth):
        ty = f"[1 x {ty}]"
    return OURS + f"@g = global {ty} zeroinitializer\n".encode() + b"define ptr @f() {\n  ret ptr @g\n}\n"


BAD_LL = {  # class: (file bytes, fragments of the one line)
    "llvm bitcode": (b"BC\xc0\xde\x35\x14\x00\x00", ["LLVM bitcode, not text IR", "llvm-dis-19"]),
    "bitcode wrapper": (b"\xde\xc0\x17\x0b\x00\x00\x00\x00", ["LLVM bitcode, not text IR"]),
    "elf": (b"\x7fELF\x01\x01\x01" + bytes(40), ["an ELF binary"]),
    "utf-16 with bom": ((OURS + FN).decode().encode("utf-16"), ["UTF-16 text", "iconv"]),
    "utf-16 without bom": ((OURS + FN).decode().encode("utf-16-le"), ["UTF-16 text (every other byte is NUL)"]),
    "utf-32": ((OURS + FN).decode().encode("utf-32"), ["UTF-32 text"]),
    "binary": (bytes(range(1, 32)) * 40, ["binary data, not LLVM IR text"]),
    "nul byte": (OURS + b"define void @f() {\n  ret void\x00\n}\n", [":3:11: error: NUL byte at offset 69"]),
    "non-utf-8 byte in code": (OURS + b"define void @f\xe9() {\n  ret void\n}\n", [":2:15: error: byte 0xe9 is not UTF-8"]),
    "empty file": (b"", ["empty module"]),
    "comments only": (b"; nothing here\n\n;; still nothing\n", ["empty module"]),
    "triple and comments only": (OURS + b"; nothing\n", ["empty module"]),
    "declarations only": (OURS + b"declare void @g()\n@x = external global i32\n", ["defines nothing (only declarations)"]),
    "other architecture": (b'target triple = "aarch64-unknown-linux-gnu"\n' + FN,
                           ["'aarch64-unknown-linux-gnu' is for aarch64, not thumbv7em"]),
    "soft-float eabi": (b'target triple = "thumbv7em-none-eabi"\n' + FN, ["soft-float (eabi)"]),
    "no triple": (FN, ["no target triple"]),
    "verifier error": (OURS + b"define i32 @f(i32 %a) {\nentry:\n  br label %b\nb:\n  ret i32 %x\n"
                       b"c:\n  %x = add i32 %a, 1\n  br label %b\n}\n",
                       ["invalid IR: Instruction does not dominate all uses!"]),
    "x86 intrinsic": (OURS + b"declare <4 x float> @llvm.x86.sse.rcp.ps(<4 x float>)\n"
                      b"define <4 x float> @f(<4 x float> %a) {\n"
                      b"  %b = call <4 x float> @llvm.x86.sse.rcp.ps(<4 x float> %a)\n  ret <4 x float> %b\n}\n",
                      [":2: calls the x86 intrinsic llvm.x86.sse.rcp.ps"]),
    "aarch64 intrinsic": (OURS + b"declare i32 @llvm.aarch64.crc32b(i32, i32)\n"
                          b"define i32 @f(i32 %a) {\n  %b = call i32 @llvm.aarch64.crc32b(i32 %a, i32 %a)\n"
                          b"  ret i32 %b\n}\n", ["AArch64 intrinsic llvm.aarch64.crc32b"]),
    "scalable vector": (OURS + b"define <vscale x 4 x i32> @f(<vscale x 4 x i32> %a) {\n"
                        b"  %b = add <vscale x 4 x i32> %a, %a\n  ret <vscale x 4 x i32> %b\n}\n",
                        [":2: scalable vector type"]),
    "x86_fp80": (OURS + b"define x86_fp80 @f(x86_fp80 %a) {\n  %b = fadd x86_fp80 %a, %a\n  ret x86_fp80 %b\n}\n",
                 [":2: type x86_fp80 exists only on another architecture"]),
    "inline asm": (OURS + b'define void @f() {\n  call void asm sideeffect "movq %rax, %rbx", ""()\n  ret void\n}\n',
                   ["function 'f' uses inline assembly 'movq %rax, %rbx', which llvmlite's LLVM cannot assemble"]),
    "nesting depth": (_nested(60_000), [":2: types or constants nested 60000 deep"]),
}


@pytest.mark.parametrize("case", list(BAD_LL))
def test_bad_ll_one_line(case, tmp_path, capsys):
    data, fragments = BAD_LL[case]
    ll = tmp_path / "in.ll"
    ll.write_bytes(data)
    assert main([str(ll), "-S", "-o", str(tmp_path / "out.ll")]) == 2
    err = capsys.readouterr().err
    assert_one_line_error(subprocess.CompletedProcess([], 2, "", err), *fragments)
    assert not (tmp_path / "out.ll").exists()


def test_bad_ll_from_cli_process(tmp_path):
    """The same through the real command: no traceback, even for input that crashes LLVM."""
    for case in ("llvm bitcode", "nesting depth", "utf-16 with bom"):
        ll = tmp_path / f"{case.replace(' ', '_')}.ll"
        ll.write_bytes(BAD_LL[case][0])
        assert_one_line_error(run_cli(ll), *BAD_LL[case][1])


def test_bad_ll_run_command(tmp_path):
    ll = tmp_path / "model.ll"
    ll.write_bytes(BAD_LL["llvm bitcode"][0])
    assert_one_line_error(run_cli("run", ll), "LLVM bitcode")


def test_utf8_bom_skipped_and_verbatim_bytes_kept(tmp_path):
    """A UTF-8 BOM is skipped; a non-UTF-8 byte in a comment or a string is the byte LLVM reads."""
    ll = tmp_path / "m.ll"
    ll.write_bytes(b"\xef\xbb\xbf" + OURS + b"; caf\xe9\n@s = constant [1 x i8] c\"\xff\"\n"
                   b"define ptr @f() {\n  ret ptr @s\n}\n")
    model = inputs.load(ll)
    assert model.entries == ("f",)
    mod = module.parse(model.text, "m.ll")
    assert '@s = constant [1 x i8] c"\\FF"' in str(mod)  # LLVM prints the byte 0xff so


SPELLINGS = ["thumbv7em-none-eabihf", "thumbv7em-unknown-none-eabihf", "thumbv7em-none-unknown-eabihf",
             "armv7em-none-eabihf", "armv7em-unknown-none-eabihf", "thumbv7em-arm-none-eabihf",
             "thumbv7em-none-gnueabihf", "THUMBV7EM-NONE-EABIHF"]


@pytest.mark.parametrize("triple", SPELLINGS)
def test_every_spelling_of_the_target_is_accepted_and_retargeted(triple, tmp_path):
    assert triples.problem(triple) is None
    ll = tmp_path / "m.ll"
    ll.write_bytes(f'target triple = "{triple}"\n'.encode() + FN)
    model = inputs.load(ll)
    assert f'target triple = "{TARGET.triple}"' in model.text and model.entries == ("f",)


def test_retargeted_spelling_builds(tmp_path):
    ll = tmp_path / "m.ll"
    ll.write_bytes(b'target triple = "armv7em-none-unknown-eabihf"\n' + FN)
    r = run_cli(ll, "--emit", "asm", "-o", tmp_path / "m.s")
    assert r.returncode == 0, r.stderr
    assert "add" in (tmp_path / "m.s").read_text()


@pytest.mark.parametrize("triple,arch", [("x86_64-unknown-linux-gnu", "x86_64"), ("riscv32-unknown-none-elf", "riscv32"),
                                         ("thumbv7m-none-eabi", "thumbv7m"), ("armv8m.main-none-eabihf", "armv8m.main")])
def test_other_architectures_are_named(triple, arch):
    assert f"is for {arch}, not thumbv7em" in triples.problem(triple)


def test_llvm_crash_in_parser_is_one_line():
    """Without the scan, the trial parse in a child process turns LLVM's stack overflow into a line."""
    with pytest.raises(UserError, match=r"LLVM crashed \(segmentation fault\) while parsing n\.ll"):
        module.parse_input(_nested(60_000).decode(), "n.ll", scan=False)


def test_llvm_abort_in_codegen_is_one_line():
    mod = module.parse(BAD_LL["scalable vector"][0].decode(), "v.ll")
    with pytest.raises(UserError, match=r"LLVM aborted while emitting Cortex-M4 code for v\.ll: "
                                        r"(assertion failed|LLVM ERROR)"):
        emit.emit_object(mod)


def test_isolate_passes_results_and_user_errors():
    assert isolate.run(lambda: b"x" * 100_000, "testing") == b"x" * 100_000

    def bad():
        raise UserError("a clear line")

    with pytest.raises(UserError, match="^a clear line$"):
        isolate.run(bad, "testing")


# ---- outputs with NaN and inf ----

def _manifest(ref):
    ref = np.asarray(ref, np.float32)
    return Manifest("m", "m_run", (), (Tensor("out0", ref.shape, "float32", "m_out0", 0, tuple(ref.tolist())),), ())


import numpy as np  # noqa: E402

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("got,ref,ok", [
    ([NAN, INF, -INF, 1.0], [NAN, INF, -INF, 1.0], True),
    ([-NAN, INF, 1.0], [NAN, INF, 1.0], True),  # a NaN's sign is not a value (x86 and Arm differ)
    ([NAN, -INF, 1.0], [NAN, INF, 1.0], False),  # inf of the other sign
    ([1.0, INF], [NAN, INF], False),  # a number where JAX has NaN
    ([NAN, 1.0], [2.0, 1.0], False),  # NaN where JAX has a number
    ([INF, 1.0], [3e38, 1.0], False),
    ([NAN, 1.0 + 1e-7], [NAN, 1.0], True),  # finite values within tolerance
    ([NAN, 1.001], [NAN, 1.0], False),
])
def test_nan_inf_aware_comparison(got, ref, ok):
    max_abs, _, passed = errors([np.asarray(got, np.float32)], _manifest(ref))
    assert passed is ok
    assert (max_abs < 1e-3) is ok


def test_model_with_nan_and_inf_outputs_passes(tmp_path):
    src = tmp_path / "naninf.py"
    src.write_text("import jax.numpy as jnp\nimport numpy as np\n"
                   "def naninf(x):\n    return jnp.log(x), 1.0 / x\n"
                   "naninf.example_inputs = {'x': np.array([0.0, -1.0, 2.0, -0.0], np.float32)}\n")
    out = tmp_path / "out"
    r = run_cli("capture", f"{src}:naninf", "-o", out)
    assert r.returncode == 0, r.stderr
    r = run_cli("run", out / "model.ll", "--json")
    assert r.returncode == 0, r.stderr + r.stdout
    assert '"status": "pass"' in r.stdout


# ---- memory ----

def test_overflow_names_the_sizes():
    ld = ("ld: x.elf section `.model.rodata' will not fit in region `FLASH'\n"
          "ld: region `FLASH' overflowed by 4610132 bytes\ncollect2: error: ld returned 1 exit status\n")
    assert overflow_message(ld) == ("model needs 8.4 MiB (8,804,436 bytes) of flash; mps2-an386 has 4 MiB "
                                    "(weights, constants and code)")


def test_flash_and_ram_overflow_from_cli(tmp_path):
    ll = tmp_path / "big.ll"
    ll.write_bytes(OURS + b"@w = constant [2200000 x i32] zeroinitializer\n"
                   b"@buf = global [1200000 x i32] zeroinitializer\n"
                   b"define i32 @f(i32 %i) {\n  %p = getelementptr [2200000 x i32], ptr @w, i32 0, i32 %i\n"
                   b"  %v = load volatile i32, ptr %p\n  %q = getelementptr [1200000 x i32], ptr @buf, i32 0, i32 %i\n"
                   b"  store i32 %v, ptr %q\n  ret i32 %v\n}\n")
    r = run_cli(ll, "--variants", "separate", "-o", tmp_path / "v")
    assert_one_line_error(r, "model needs 8.4 MiB", "of flash; mps2-an386 has 4 MiB",
                          "model needs 4.6 MiB (4,800,000 bytes) of RAM")
    assert "collect2" not in r.stderr


# ---- capture ----

def _capture_file(tmp_path, name, body, *args, env=None):
    src = tmp_path / f"{name}.py"
    src.write_text(body)
    out = tmp_path / f"out_{name}"
    r = subprocess.run([*SPECIALIZE, "capture", f"{src}:{name}", "-o", str(out), *args], capture_output=True,
                       text=True, env=env)
    return r, src, out


def test_capture_never_ending_loop_times_out_and_cleans_up(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    import os
    env = dict(os.environ, TMPDIR=str(tmp))
    r, _, out = _capture_file(tmp_path, "spin", (
        "import jax, jax.numpy as jnp, numpy as np\n"
        "def spin(x):\n"
        "    return jax.lax.while_loop(lambda c: c[0] >= 0, lambda c: (c[0] * 1, c[1] + 1), (jnp.int32(0), x))[1]\n"
        "spin.example_inputs = {'x': np.ones(4, np.float32)}\n"), "--timeout", "6", env=env)
    assert_one_line_error(r, "did not finish within 6 s")
    assert not out.exists()
    assert list(tmp.iterdir()) == []  # the capture's temporary directory is gone


def _workers(model: Path) -> list[int]:
    """Pids of capture workers running `model` (from /proc: their command lines)."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if d.name.isdigit() and b"specializer.capture.capture_worker" in cmd and str(model).encode() in cmd:
            found.append(int(d.name))
    return found


def test_capture_worker_dies_with_its_parent(tmp_path):
    """A capture killed outright (SIGKILL, as a CI step's timeout does) takes its JAX worker with
    it, even while the worker runs a model's endless loop."""
    import os
    import signal
    import time
    src = tmp_path / "spin.py"
    src.write_text("import jax, jax.numpy as jnp, numpy as np\n"
                   "def spin(x):\n"
                   "    return jax.lax.while_loop(lambda c: c[0] >= 0, lambda c: (c[0] * 1, c[1] + 1), "
                   "(jnp.int32(0), x))[1]\n"
                   "spin.example_inputs = {'x': np.ones(4, np.float32)}\n")
    parent = subprocess.Popen([*SPECIALIZE, "capture", f"{src}:spin", "-o", str(tmp_path / "out"), "--timeout", "600"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 60
        while not _workers(src) and time.monotonic() < end:
            time.sleep(0.2)
        workers = _workers(src)
        assert workers, "the capture worker did not start"
        time.sleep(2)  # inside the model's loop by now
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    end = time.monotonic() + 20
    while _workers(src) and time.monotonic() < end:
        time.sleep(0.2)
    left = _workers(src)
    for pid in left:  # do not leave it running whatever the verdict
        os.kill(pid, signal.SIGKILL)
    assert not left, "the capture worker outlived its parent"


def test_capture_reports_users_exception_with_file_and_line(tmp_path):
    r, src, _ = _capture_file(tmp_path, "boom", (
        "import numpy as np\n"
        "def helper(x):\n"
        "    raise ValueError('weights must be square')\n"
        "def boom(x):\n"
        "    return helper(x) + 1\n"
        "boom.example_inputs = {'x': np.ones(4, np.float32)}\n"))
    assert_one_line_error(r, f"{src}:3: in helper: ValueError: weights must be square")
    assert "internal frames" not in r.stderr


def test_capture_reports_syntax_error_with_file_and_line(tmp_path):
    r, src, _ = _capture_file(tmp_path, "syn", "import numpy as np\ndef syn(x):\n    return x +\n")
    assert_one_line_error(r, f"{src}:3: SyntaxError:")


def test_capture_names_custom_call_target(tmp_path):
    r, _, out = _capture_file(tmp_path, "topk", (
        "import jax, numpy as np\n"
        "def topk(x):\n    return jax.lax.top_k(x, 2)[0]\n"
        "topk.example_inputs = {'x': np.arange(8, dtype=np.float32)}\n"))
    assert_one_line_error(r, "unsupported op", "(target TopK)")
    assert not out.exists()


def test_capture_bf16_and_complex_outputs_serialize(tmp_path):
    r, _, out = _capture_file(tmp_path, "mixed", (
        "import jax.numpy as jnp, numpy as np\n"
        "def mixed(x):\n    return (x * 2).astype(jnp.bfloat16), x * (1 + 2j)\n"
        "mixed.example_inputs = {'x': np.arange(4, dtype=np.float32)}\n"))
    assert r.returncode == 0, r.stderr
    m = Manifest.load(out / "model.json")
    bf, cx = (t.array() for t in m.outputs)
    assert str(bf.dtype) == "bfloat16" and bf.astype(np.float32).tolist() == [0.0, 2.0, 4.0, 6.0]
    assert cx.dtype == np.complex64 and cx.tolist() == [0j, 1 + 2j, 2 + 4j, 3 + 6j]
    assert sorted(p.name for p in out.iterdir()) == ["hlo.json", "model.json", "model.ll"]  # no temporary left
