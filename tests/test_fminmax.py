"""maximum/minimum with a constant operand as fcmp + select (specializer/capture/fminmax.py), run on
the host: the same bits as the intrinsic for every edge value. The IR it writes: tests/ir/fminmax_relu.ll
(tests/test_ir.py)."""

import ctypes
import struct

import llvmlite.binding as llvm
import pytest

from specializer.capture.fminmax import lower


def _bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


EDGES = [0.0, -0.0, 1.0, -1.0, 6.0, 5.999999, 1e-45, -1e-45, 1.1754942e-38, -3.4e38,
         float("inf"), float("-inf"), float("nan"), -float("nan")]
CONSTS = ["0.000000e+00", "-0.000000e+00", "6.000000e+00", "-1.000000e+00", "0x36A0000000000000"]


def _jit(text: str):
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(text)
    mod.verify()
    tm = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    return engine


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("const", CONSTS)
@pytest.mark.parametrize("swap", [False, True])
def test_same_bits_as_the_intrinsic(op, const, swap):
    args = f"float {const}, float %x" if swap else f"float %x, float {const}"
    src = (f"define float @f(float %x) {{\n  %r = call float @llvm.{op}.f32({args})\n  ret float %r\n}}\n"
           f"declare float @llvm.{op}.f32(float, float)\n")
    low = lower(src)
    assert "@llvm." not in low.split("declare")[0]
    fns = []
    for text in (src, low):
        eng = _jit(text)
        fns.append((eng, ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)(eng.get_function_address("f"))))
    for x in EDGES:
        want, got = fns[0][1](x), fns[1][1](x)
        if want != want:
            assert got != got, (op, const, x)
        else:
            assert _bits(got) == _bits(want), (op, const, x, got, want)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_two_values_same_bits_as_the_intrinsic(op):
    src = (f"define float @f(float %x, float %y) {{\n  %r = call float @llvm.{op}.f32(float %x, float %y)\n"
           f"  ret float %r\n}}\ndeclare float @llvm.{op}.f32(float, float)\n")
    low = lower(src)
    assert "@llvm." not in low.split("declare")[0]
    fns = []
    for text in (src, low):
        eng = _jit(text)
        fns.append((eng, ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_float)(
            eng.get_function_address("f"))))
    for x in EDGES:
        for y in EDGES:
            want, got = fns[0][1](x, y), fns[1][1](x, y)
            if want != want:
                assert got != got, (op, x, y)
            else:
                assert _bits(got) == _bits(want), (op, x, y, got, want)
