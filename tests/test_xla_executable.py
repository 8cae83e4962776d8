"""Decoding of jax's serialized XLA:CPU executable (specializer.xla_executable)."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from specializer import xla_executable as xe  # noqa: E402


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
    assert quad.envelope[-1] == "CompilationResultProto"
    assert quad.obj_files_kind == 2  # KERNELS: thunk runtime
    assert [str(s) for s in quad.parameter_shapes] == ["f32[]"] * 3
    assert quad.result_shape.is_tuple and len(quad.result_shape.tuple_shapes) == 2

    kernels = [t for t in quad.thunks if isinstance(t, xe.KernelThunk)]
    assert len(kernels) == len(quad.thunks) == 3
    names = {k.kernel_name for k in kernels}
    assert names == {"subtract_sqrt_fusion", "multiply_divide_fusion", "subtract_divide_fusion"}
    assert names <= {s.name for s in quad.symbols}
    for k in kernels:
        assert k.op_name == k.kernel_name
        assert len(k.arguments) == 3 and len(k.results) == 1 and len(k.args) == 4
        assert k.num_workgroups == (1, 1, 1)
        assert all(a.shape is not None and str(a.shape) == "f32[]" for a in k.args)
        assert all(a.slice.size == 4 for a in k.args)
    _check_slices(quad)


def test_quad_allocations(quad):
    allocs = quad.allocations
    assert [a.index for a in allocs] == list(range(len(allocs)))
    params = sorted(a.parameter_number for a in allocs if a.kind == "parameter")
    assert params == [0, 1, 2]
    assert all(a.size == 4 for a in allocs if a.kind == "parameter")
    out = [a for a in allocs if a.kind == "output" and a.is_tuple]
    assert len(out) == 1 and out[0].size == 16  # tuple of two pointers
    # Logical values are resolved to HLO instruction names.
    values = {v.instruction for a in allocs for v in a.values}
    assert {"subtract_sqrt_fusion", "multiply_divide_fusion"} <= values
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


def _ld(field_no: int, payload: bytes) -> bytes:
    """Length-delimited protobuf field (payloads here are < 128 bytes)."""
    assert len(payload) < 128
    return bytes([field_no << 3 | 2, len(payload)]) + payload


def test_unknown_thunk_kind_is_kept():
    # ThunkProto{kind="future-op", info{op_name="foo.1"}, field 99 = {}}
    data = _ld(1, b"future-op") + _ld(2, _ld(1, b"foo.1")) + bytes([0x9A, 0x06, 0x00])
    t = xe._thunk(xe._Msg(data))
    assert type(t) is xe.Thunk
    assert (t.kind, t.impl, t.impl_field, t.op_name) == ("future-op", "field99", 99, "foo.1")


def test_rejects_garbage():
    with pytest.raises(xe.DecodeError):
        xe.decode_executable(b"\x01\x02\x03 not an executable")
