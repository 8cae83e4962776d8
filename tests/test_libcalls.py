"""Capture lowers what XLA leaves to its runtime (dots, convolutions) onto libjit kernel calls.

The calls must carry the shapes as constant i32 arguments and the buffers as global addresses
(weights: the constant weight globals), which is what the specializer later works on."""

import re
import subprocess
import sys

import pytest


from specializer.llvm import module
from specializer.library import libjit
from specializer.capture import libcalls
from specializer.errors import UserError
from specializer.capture.thunks import LibCall, Scratch, Slice

SPECIALIZE = [sys.executable, "-m", "specializer.cli"]


def calls(text: str, fn: str) -> list[str]:
    return re.findall(rf"call void @{fn}\((.*)\)", text)


def test_mlp_dots_call_libjit_with_weights_and_constant_dims(captured):
    ir = captured("mlp256").model_ll.read_text()
    first, second = calls(ir, "libjit_matmul_f32")
    # out, lhs, rhs(weight global), batch, m, k, n, lhs_transposed, rhs_transposed
    assert first.endswith("ptr @mlp256_w_w1, i32 1, i32 1, i32 256, i32 512, i32 0, i32 0")
    assert second.endswith("ptr @mlp256_w_w2, i32 1, i32 1, i32 512, i32 10, i32 0, i32 0")
    assert "@mlp256_w_w1 = constant [131072 x float]" in ir
    assert "dot.2_kernel" not in ir  # XLA's own dot code is gone


def test_convolutions_call_libjit_conv(captured):
    ir = captured("lenet").model_ll.read_text()
    c1, c2 = calls(ir, "libjit_conv2d_f32")
    # out, in, filter, scratch, batch, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w,
    # stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, groups
    assert "ptr @lenet_in_x, ptr @lenet_w_c1, ptr @lenet_scratch" in c1
    assert c1.endswith("i32 1, i32 28, i32 28, i32 1, i32 24, i32 24, i32 6, i32 5, i32 5, "
                       "i32 1, i32 1, i32 0, i32 0, i32 1, i32 1, i32 1")
    assert c2.endswith("i32 1, i32 12, i32 12, i32 6, i32 8, i32 8, i32 16, i32 5, i32 5, "
                       "i32 1, i32 1, i32 0, i32 0, i32 1, i32 1, i32 1")
    size = int(re.search(r"@lenet_scratch = internal global \[(\d+) x i8\]", ir).group(1))
    assert size == max(libcalls.conv_scratch_floats(24, 5, 5, 1), libcalls.conv_scratch_floats(8, 5, 5, 6)) * 4


def test_depthwise_and_strided_convolutions(captured):
    ir = captured("kws_dscnn").model_ll.read_text()
    convs = calls(ir, "libjit_conv2d_f32")
    assert len(convs) == 5
    # first layer: 10x4 filter, stride 2, SAME padding (top 4, left 1)
    assert convs[0].endswith("i32 1, i32 49, i32 10, i32 1, i32 25, i32 5, i32 64, i32 10, i32 4, "
                             "i32 2, i32 2, i32 4, i32 1, i32 1, i32 1, i32 1")
    for dw in convs[1:]:  # 3x3 depthwise: 64 groups
        assert dw.endswith("i32 3, i32 3, i32 1, i32 1, i32 1, i32 1, i32 1, i32 1, i32 64")
    assert len(calls(ir, "libjit_matmul_f32")) == 5  # XLA turned the 1x1 convs into dots


def test_int8_dot_runs_on_the_int8_buffers(captured):
    ir = captured("mlp_int8").model_ll.read_text()
    (first,) = calls(ir, "libjit_matmul_s8_s32")
    # x and w1 as stored (int8, w1 is [out][in]: transposed rhs), the widening kernels dropped
    assert "ptr @mlp_int8_in_x, ptr @mlp_int8_w_w1, i32 1, i32 1, i32 256, i32 64, i32 0, i32 1" in first
    assert "@wrapped_convert(" not in ir


def test_ir_dots_option_keeps_xla_dot_code(tmp_path):
    from specializer.capture.capture import capture
    from specializer.driver.examples import example_path

    c = capture(example_path("mlp256"), "mlp256", tmp_path, ir_dots=True)
    ir = c.model_ll.read_text()
    assert not calls(ir, "libjit_matmul_f32")


def test_dot_with_unsupported_types_is_named():
    op = libcalls.Operand(Slice(0, 0, 8), "f16", (2, 2), (1, 0))
    with pytest.raises(UserError, match=r"unsupported op: dot 'dot.7' \(f16\[2,2\]\{1,0\} x f16.*element types"):
        libcalls.lower_dot("dot.7", op, op, op, {"lhs_contracting": (1,), "rhs_contracting": (0,),
                                                  "lhs_batch": (), "rhs_batch": ()})


def test_transposed_operands_and_batch_dims():
    def op(dims, m2m, size=4):
        return libcalls.Operand(Slice(0, 0, size), "f32", dims, m2m)

    # lhs [k=3][m=2] (contracting dim 0), rhs [n=5][k=3] (contracting dim 1)
    call = libcalls.lower_dot("d", op((3, 2), (1, 0)), op((5, 3), (1, 0)), op((2, 5), (1, 0)),
                              {"lhs_contracting": (0,), "rhs_contracting": (1,), "lhs_batch": (), "rhs_batch": ()})
    assert call.args[3:] == (1, 2, 3, 5, 1, 1)
    # batched: [b=4][m=2][k=3] x [b=4][k=3][n=5]
    call = libcalls.lower_dot("d", op((4, 2, 3), (2, 1, 0)), op((4, 3, 5), (2, 1, 0)), op((4, 2, 5), (2, 1, 0)),
                              {"lhs_contracting": (2,), "rhs_contracting": (1,), "lhs_batch": (0,), "rhs_batch": (0,)})
    assert call.args[3:] == (4, 2, 3, 5, 0, 0)
    # a column-major result is refused, not computed wrongly
    with pytest.raises(UserError, match="result layout"):
        libcalls.lower_dot("d", op((2, 3), (1, 0)), op((3, 5), (1, 0)), op((2, 5), (0, 1)),
                           {"lhs_contracting": (1,), "rhs_contracting": (0,), "lhs_batch": (), "rhs_batch": ()})


def test_three_dimensional_convolution_is_refused_by_name(tmp_path):
    src = tmp_path / "conv3d.py"
    src.write_text(
        "import numpy as np\nfrom jax import lax\n"
        "def conv3d(x, w):\n"
        "    return lax.conv_general_dilated(x, w, (1, 1, 1), 'SAME', dimension_numbers=('NDHWC', 'DHWIO', 'NDHWC'))\n"
        "conv3d.example_inputs = {'x': np.ones((1, 4, 4, 4, 2), np.float32)}\n"
        "conv3d.weights = {'w': np.ones((3, 3, 3, 2, 2), np.float32)}\n")
    r = subprocess.run([*SPECIALIZE, "capture", f"{src}:conv3d", "-o", tmp_path / "out"],
                       capture_output=True, text=True)
    assert r.returncode == 2
    (line,) = r.stderr.strip().splitlines()
    assert "unsupported op: convolution" in line and "f32[1,4,4,4,2]" in line and "3 spatial dimensions" in line
    assert not (tmp_path / "out").exists()


def test_missing_library_symbol_is_a_link_error_naming_it():
    mod = module.parse('target triple = "thumbv7em-unknown-none-eabihf"\n'
                        "declare void @libjit_nope(ptr)\ndeclare float @expf(float)\n"
                        "define void @f() {\n  call void @libjit_nope(ptr null)\n  ret void\n}\n", "m.ll")
    with pytest.raises(UserError, match="link error: undefined symbol 'libjit_nope'"):
        libjit.check_symbols(mod)


def test_libcall_scratch_is_sized_by_the_largest_call():
    from specializer.capture.capture import _scratch_bytes

    a = LibCall("k", (Scratch(64), 1))
    b = LibCall("k", (Scratch(256),))
    assert _scratch_bytes((a, b, a)) == 256
