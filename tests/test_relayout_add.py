"""relayout_add.adds: the all-args rule sending an int8 add with constant parameters to
libjit_add_s8 with each input's requantization tabulated; the tables against CMSIS-NN's integer
steps; a .tflite network of adds on QEMU in every variant against TFLite Micro."""

import numpy as np
import pytest
from every_variant import every_variant_passes
from test_cmsis_nn import requantize_scalar, wrap32
from test_tflite_import import ACT, OP, act8, fb, model_bytes, operator

from specializer.capture import imported
from specializer.capture.capture import capture
from specializer.optimize import relayout_add
from specializer.run import symbols

# arm_elementwise_add_s8(in1, in2, off1, m1, s1, off2, m2, s2, left_shift, out, out_off, out_m, out_s, min, max, n)
CALL = ("  %a = call i32 @arm_elementwise_add_s8(ptr @x, ptr @y, i32 7, i32 1073741824, i32 -1, i32 -3, "
        "i32 1431655765, i32 -1, i32 {left}, ptr @out, i32 -5, i32 1717986918, i32 -19, i32 -128, i32 127, i32 64)")
MODULE = "\n".join(["@x = global [64 x i8] zeroinitializer", "@y = global [64 x i8] zeroinitializer",
                    "@out = global [64 x i8] zeroinitializer", "", "define void @f() {", CALL, CALL.replace("%a", "%b"),
                    "  ret void", "}", "", "declare i32 @arm_elementwise_add_s8(" + ", ".join(
                        ["ptr", "ptr"] + ["i32"] * 7 + ["ptr"] + ["i32"] * 6) + ")", ""])


def test_tables_are_cmsis_nns_steps():
    rng = np.random.default_rng(1)
    for _ in range(40):
        off, m = int(rng.integers(-128, 128)), int(rng.integers(1 << 30, 1 << 31))
        s, left = int(rng.integers(-12, 3)), int(rng.choice([16, 20]))
        got = relayout_add.input_table(off, m, s, left)
        for byte in range(256):
            v = byte - 256 if byte > 127 else byte
            want = requantize_scalar(int(wrap32((v + off) << left)), m, s)
            assert got[byte] == want, (off, m, s, left, v)


def test_add_calls_the_kernel_with_shared_tables():
    text, notes = relayout_add.adds(MODULE.replace("{left}", "20"), lambda line: False)
    calls = [ln for ln in text.splitlines() if " call " in ln]
    assert calls[0] == ("  %a = call i32 @libjit_add_s8(ptr @out, ptr @x, ptr @y, ptr @libjit.add.0.a, "
                        "ptr @libjit.add.0.b, ptr @libjit.add.0.rq, i32 1, i32 -5, i32 -128, i32 127, i32 64)")
    assert calls[1].replace("%b", "%a") == calls[0]  # the same constants: one set of tables
    assert text.count("@libjit.add.0.a = internal unnamed_addr constant [256 x i32]") == 1
    assert "@libjit.add.1" not in text
    assert "declare i32 @libjit_add_s8(ptr, ptr, ptr, ptr, ptr, ptr, i32, i32, i32, i32, i32)" in text
    assert [n.kernel for n in notes] == ["libjit_add_s8"] * 2 and notes[0].fast
    # the fast form: the tables doubled, the record (0, multiplier, K, rs)
    ta = relayout_add.input_table(7, 1073741824, -1, 20)
    assert f"[256 x i32] [i32 {2 * ta[0]}, i32 {2 * ta[1]}," in text
    rs = 19
    assert f"[4 x i32] [i32 0, i32 1717986918, i32 {(1 << (rs - 1)) - 5 * (1 << rs)}, i32 {rs}]" in text


def test_a_small_left_shift_is_left_alone():
    text, notes = relayout_add.adds(MODULE.replace("{left}", "8"), lambda line: False)
    assert "@arm_elementwise_add_s8(" in text and "libjit_add_s8" not in text
    assert "left shift 8 outside [16, 31]" in notes[0].log_line()


def _add(a, b, y, act=ACT.NONE):
    o = fb.AddOptionsT()
    o.fusedActivationFunction = act
    return operator(OP.ADD, [a, b], [y], o, fb.BuiltinOptions.AddOptions)


@pytest.mark.parametrize("act", [ACT.NONE, ACT.RELU])
def test_adds_bit_exact_with_tflite_micro_in_every_variant(act, tmp_path):
    """x + z, then that + x (an input used twice, different scales and zero points), int8 on QEMU:
    all-args on libjit_add_s8, every variant against TFLite Micro."""
    x, z = act8((1, 6, 7, 5), 0.05, -3, "x"), act8((1, 6, 7, 5), 0.08, 11, "z")
    s1, s2 = act8((1, 6, 7, 5), 0.02, 4, "s1"), act8((1, 6, 7, 5), 0.025, -20, "s2")
    path = tmp_path / "adds.tflite"
    path.write_bytes(model_bytes([_add(x, z, s1, act), _add(s1, x, s2)], [x, z], [s2]))
    c = capture(path, None, tmp_path / "cap", examples=3)
    want = imported.run_tflite_micro(imported.read(path), [tuple(i.array() for i in c.manifest.inputs)])[0][0]
    got = c.manifest.outputs[0].array()
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) >= 30
    every_variant_passes(c.model_ll, tmp_path, exact=True)
    names = [f[2] for f in symbols.functions(tmp_path / "cmp" / "all-args" / "firmware.elf")]
    assert sum(n.startswith("libjit_add_s8") for n in names) == 2, names  # each add on the kernel
    assert not any(n.startswith("arm_elementwise_add_s8") for n in names)
    lto = [f[2] for f in symbols.functions(tmp_path / "cmp" / "lto" / "firmware.elf")]
    assert any(n.startswith("arm_elementwise_add_s8") for n in lto)
