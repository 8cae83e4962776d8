"""Decoding of jax's serialized XLA:CPU executable (specializer.capture.xla_executable)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from specializer.capture import xla_executable as xe  # noqa: E402
from specializer.capture.proto import xla_subset_pb2 as pb  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _decode(fn, *args) -> xe.Executable:
    data = xe.serialize(jax.jit(fn).lower(*args).compile())
    return xe.decode_executable(data)


def _check_slices(exe: xe.Executable) -> None:
    """Every slice of every thunk (nested too) lies inside its allocation."""
    n = len(exe.allocations)
    for t in exe.walk():
        for s in t.buffer_slices():
            assert 0 <= s.allocation < n, (t.op_name, s)
            assert s.size > 0 and s.offset >= 0
            assert s.offset + s.size <= exe.allocations[s.allocation].size, (t.op_name, s)


def _quad(a, b, c):
    d = jnp.sqrt(b * b - 4 * a * c)
    return (-b + d) / (2 * a), (-b - d) / (2 * a)


@pytest.fixture(scope="module")
def quad():
    return _decode(_quad, np.float32(1), np.float32(-3), np.float32(2))


def test_quad_structure(quad):
    kernels = [t for t in quad.thunks if isinstance(t, xe.KernelThunk)]
    assert len(kernels) == len(quad.thunks) == 3
    names = {k.kernel_name for k in kernels}
    assert names == {"subtract_sqrt_fusion", "multiply_divide_fusion", "subtract_divide_fusion"}
    for k in kernels:
        assert k.kind == "kernel" and k.op_name == k.kernel_name
        assert len(k.arguments) == 3 and len(k.results) == 1 and len(k.args) == 4
        assert k.num_workgroups == (1, 1, 1)
        assert all(a.shape is not None and str(a.shape) == "f32[]" for a in k.args)
        assert all(a.slice.size == 4 for a in k.args)
    _check_slices(quad)


def test_quad_allocations(quad):
    allocs = quad.allocations
    assert [a.index for a in allocs] == list(range(len(allocs)))
    params = sorted(a.parameter for a in allocs if a.kind == "parameter")
    assert params == [0, 1, 2]
    assert all(a.size == 4 for a in allocs if a.kind == "parameter")
    out = [a for a in allocs if a.kind == "output" and a.size == 16]
    assert len(out) == 1  # the result tuple: two pointers
    # Logical values are resolved to HLO instruction names.
    values = {v.instruction for a in allocs for v in a.values}
    assert {"subtract_sqrt_fusion", "multiply_divide_fusion"} <= values
    alloc, v = quad.locate("subtract_sqrt_fusion")
    assert v.size == 4 and quad.allocations[alloc].kind in ("temp", "output")
    with pytest.raises(KeyError):
        quad.locate("no_such_instruction")
    assert quad.constants == {} and quad.missing_constants == ()


def test_conditional():
    exe = _decode(lambda p, x: jax.lax.cond(p > 0, jnp.exp, lambda v: v * 2.0, x),
                  np.float32(1), np.ones(4, np.float32))
    conds = [t for t in exe.walk() if isinstance(t, xe.ConditionalThunk)]
    assert len(conds) == 1
    c = conds[0]
    assert c.kind == "conditional" and len(c.branches) == 2
    assert all(len(b) >= 1 for b in c.branches)
    assert c.branch_index_buffer.size in (1, 4)  # pred or s32 index
    # The index is produced by a kernel thunk before the conditional.
    producers = [t for t in exe.thunks if isinstance(t, xe.KernelThunk)
                 and c.branch_index_buffer in [r.slice for r in t.results]]
    assert producers
    _check_slices(exe)


def test_big_while_loop():
    exe = _decode(lambda x: jax.lax.fori_loop(0, 5, lambda i, v: v * 1.5 + jnp.tanh(v), x),
                  np.ones(4096, np.float32))
    whiles = [t for t in exe.walk() if isinstance(t, xe.WhileThunk)]
    assert len(whiles) == 1
    w = whiles[0]
    assert w.cond_sequence and w.body_sequence
    assert w.trip_count in (None, 5)
    assert w.cond_buffer.size == 1  # pred
    # The condition sequence writes the predicate buffer.
    assert any(isinstance(t, xe.KernelThunk) and w.cond_buffer in [r.slice for r in t.results]
               for t in w.cond_sequence)
    assert any(isinstance(t, xe.KernelThunk) and "tanh" in t.kernel_name for t in w.body_sequence)
    # Loop bounds are constant allocations with recovered values.
    consts = [a for a in exe.allocations if a.kind == "constant"]
    assert consts and not exe.missing_constants
    ints = sorted(int(np.frombuffer(exe.constants[a.index], np.int32)[0]) for a in consts)
    assert 5 in ints and 0 in ints
    _check_slices(exe)


def test_constant_bytes():
    c = np.random.default_rng(0).standard_normal((4, 250)).astype(np.float32)
    exe = _decode(lambda x: x + c, np.ones((4, 250), np.float32))
    consts = [a.index for a in exe.allocations if a.kind == "constant"]
    assert len(consts) == 1
    assert np.array_equal(np.frombuffer(exe.constants[consts[0]], np.float32), c.ravel())


def test_unknown_thunk_kind_is_kept():
    # a kind this schema does not decode (e.g. sort) keeps its kind and HLO instruction, so
    # capture can refuse it by name
    m = pb.ThunkProto(kind="sort")
    m.info.op_name = "sort.1"
    raw = m.SerializeToString() + bytes([0x2A, 0x00])  # field 5 (sort_thunk), empty
    parsed = pb.ThunkProto.FromString(raw)
    t = xe._thunk(parsed)
    assert type(t) is xe.Thunk and (t.kind, t.op_name) == ("sort", "sort.1")


def test_rejects_garbage():
    with pytest.raises(xe.DecodeError):
        xe.decode_executable(b"\x01\x02\x03 not an executable")
    with pytest.raises(xe.DecodeError, match="IFRT header"):
        xe.decode_executable(b"")


@pytest.mark.parametrize("damage", ["truncated", "garbled"])
def test_rejects_damaged_executable_in_one_line(quad_bytes, damage):
    if damage == "truncated":
        data = quad_bytes[:len(quad_bytes) * 2 // 3]
    else:  # a length prefix near the start of the CompilationResultProto made far too long
        data = bytearray(quad_bytes)
        data[-len(data) * 2 // 3:] = b"\xff" * (len(data) * 2 // 3)
        data = bytes(data)
    with pytest.raises(xe.DecodeError) as e:
        xe.decode_executable(data)
    msg = str(e.value)
    assert "\n" not in msg and "truncated or garbled" in msg, msg


def test_capture_reports_a_damaged_executable(tmp_path, quad_bytes):
    from specializer.capture.capture import build_module
    from specializer.errors import UserError
    work = tmp_path / "work"
    (work / "dump").mkdir(parents=True)
    (work / "dump" / "module_0000.jit_f.cpu_after_optimizations.txt").write_text(
        "HloModule jit_f\n\nENTRY %main (p: f32[]) -> f32[] {\n  ROOT %p = f32[] parameter(0)\n}\n")
    (work / "io.json").write_text('{"params": [], "n_outputs": 1, "versions": {"jaxlib": "0.10.2"}}')
    np.savez(work / "io.npz", out0=np.zeros(1, np.float32))
    (work / "executable.bin").write_bytes(quad_bytes[:100])
    with pytest.raises(UserError) as e:
        build_module(work, "f")
    msg = str(e.value)
    assert msg.startswith("capture: cannot decode XLA's serialized executable:") and "\n" not in msg, msg


@pytest.fixture(scope="module")
def quad_bytes():
    return xe.serialize(jax.jit(_quad).lower(np.float32(1), np.float32(-3), np.float32(2)).compile())


def test_generated_module_is_current(tmp_path):
    """xla_subset_pb2.py is what protoc makes of xla_subset.proto today."""
    proto_dir = ROOT / "specializer" / "capture" / "proto"
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{proto_dir}", f"--python_out={tmp_path}",
                    "xla_subset.proto"], check=True, cwd=ROOT)
    assert (tmp_path / "xla_subset_pb2.py").read_bytes() == (proto_dir / "xla_subset_pb2.py").read_bytes(), \
        "specializer/capture/proto/xla_subset_pb2.py is stale: regenerate it (command in xla_subset.proto)"
