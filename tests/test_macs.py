"""macs: the multiply-accumulates of a captured model, CMSIS-NN s8 calls included."""

from __future__ import annotations

from specializer.report import macs

# conv 1x5x6x3 -> 1x5x6x4, 3x3 filter: 120 outputs x 27; depthwise 1x5x6x4, 3x3: 120 x 9;
# dense batch 2, 8 -> 3: 2 x 8 x 3; the last conv's dims are no constant: not counted
MODULE = """@c.filter_dims = private unnamed_addr constant [4 x i32] [i32 4, i32 3, i32 3, i32 3], align 4
@c.output_dims = private unnamed_addr constant [4 x i32] [i32 1, i32 5, i32 6, i32 4], align 4
@"d.filter_dims" = private unnamed_addr constant [4 x i32] [i32 1, i32 3, i32 3, i32 4], align 4
@d.output_dims = private unnamed_addr constant [4 x i32] [i32 1, i32 5, i32 6, i32 4], align 4
@f.filter_dims = private unnamed_addr constant [4 x i32] [i32 8, i32 1, i32 1, i32 3], align 4
@f.output_dims = private unnamed_addr constant [4 x i32] [i32 2, i32 1, i32 1, i32 3], align 4
@v.dims = global [4 x i32] [i32 1, i32 5, i32 6, i32 4], align 4

define void @m_run() {
  %1 = call i32 @arm_convolve_s8(ptr @x, ptr @x, ptr @x, ptr @x, ptr @in, ptr @c.filter_dims, ptr @w, ptr @x, ptr @b, ptr null, ptr @c.output_dims, ptr @out)
  %2 = call i32 @arm_depthwise_conv_s8(ptr @x, ptr @x, ptr @x, ptr @x, ptr @in, ptr @"d.filter_dims", ptr @w, ptr @x, ptr @b, ptr @d.output_dims, ptr @out)
  %3 = call i32 @arm_fully_connected_s8(ptr @x, ptr @x, ptr @x, ptr @x, ptr @in, ptr @f.filter_dims, ptr @w, ptr @x, ptr @b, ptr @f.output_dims, ptr @out)
  %4 = call i32 @arm_convolve_s8(ptr @x, ptr @x, ptr @x, ptr @x, ptr @in, ptr @c.filter_dims, ptr @w, ptr @x, ptr @b, ptr null, ptr @v.dims, ptr @out)
  call void @libjit_matmul_s8_s32(ptr @out, ptr @in, ptr @w, i32 1, i32 1, i32 16, i32 2, i32 0, i32 1)
  ret void
}
"""


def test_cmsis_nn_calls_are_counted_from_their_dims():
    assert macs.cmsis_nn(MODULE.split("\n")) == 120 * 27 + 120 * 9 + 2 * 8 * 3
    assert macs.count(MODULE) == 120 * 27 + 120 * 9 + 2 * 8 * 3 + 16 * 2


def test_wrapper_calls_are_counted_like_the_general_functions():
    wrapped = (MODULE.replace("@arm_convolve_s8(", "@arm_convolve_wrapper_s8(").replace("ptr @b, ptr null, ", "ptr @b, ")
               .replace("@arm_depthwise_conv_s8(", "@arm_depthwise_conv_wrapper_s8("))
    assert "arm_convolve_s8" not in wrapped and "arm_depthwise_conv_s8" not in wrapped
    assert macs.cmsis_nn(wrapped.split("\n")) == macs.cmsis_nn(MODULE.split("\n"))


def test_the_forms_the_wrapper_picks_are_counted_like_the_general_functions():
    for conv in ("arm_convolve_1x1_s8_fast", "arm_convolve_1x1_s8", "arm_convolve_1_x_n_s8"):
        for dw in ("arm_depthwise_conv_3x3_s8", "arm_depthwise_conv_s8_opt"):
            picked = (MODULE.replace("@arm_convolve_s8(", f"@{conv}(").replace("ptr @b, ptr null, ", "ptr @b, ")
                      .replace("@arm_depthwise_conv_s8(", f"@{dw}("))
            assert macs.cmsis_nn(picked.split("\n")) == macs.cmsis_nn(MODULE.split("\n")), (conv, dw)


def test_a_v6_style_call_is_not_counted():
    # arm_convolve_s8 without upscale_dims has output dims where v7 has upscale_dims: skipped
    v6 = MODULE.replace("ptr @b, ptr null, ptr @c.output_dims", "ptr @b, ptr @c.output_dims")
    assert macs.cmsis_nn(v6.split("\n")) == 120 * 9 + 2 * 8 * 3


def test_kws_int8_counts_what_its_float_model_does(captured):
    """Every conv, depthwise conv and dense layer of kws_int8 is a CMSIS-NN call; their MACs
    are the float model's (its libjit convolution and dot calls)."""
    text = captured("kws_int8").model_ll.read_text()
    # capture calls the forms the wrappers pick (3x3 depthwise, 1x1 fast)
    assert "call i32 @arm_depthwise_conv_3x3_s8(" in text and "call i32 @arm_convolve_1x1_s8_fast(" in text
    assert "libjit_conv2d_f32" not in text
    assert macs.count(text) == macs.cmsis_nn(text.split("\n")) == macs.count(captured("kws_dscnn").model_ll.read_text())
    assert macs.count(text) > 0
