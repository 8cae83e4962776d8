"""relayout_depthwise.depthwise: the all-args rule sending an int8 depthwise call with constant
weights, bias and quantization to libjit_dwconv_s8 with its weights as int16 pairs; every other
depthwise call is left alone with the reason."""

from specializer.optimize import relayout, relayout_depthwise

# one channel, a 1x3 filter over a 1x4 input, padding 1 left and right, stride 1:
# params {input_offset, output_offset, ch_mult, stride w/h, padding w/h, dilation w/h, act min/max}
MODULE = r"""@p = private unnamed_addr constant [11 x i32] [i32 128, i32 -4, i32 1, i32 1, i32 1, i32 1, i32 0, i32 1, i32 1, i32 -128, i32 127], align 4
@m = private unnamed_addr constant [1 x i32] [i32 1073741824], align 4
@s = private unnamed_addr constant [1 x i32] [i32 -2], align 4
@q = private unnamed_addr constant { ptr, ptr } { ptr @m, ptr @s }, align 4
@in = private unnamed_addr constant [4 x i32] [i32 1, i32 1, i32 4, i32 1], align 4
@fd = private unnamed_addr constant [4 x i32] [i32 1, i32 1, i32 3, i32 1], align 4
@bd = private unnamed_addr constant [4 x i32] [i32 1, i32 1, i32 1, i32 1], align 4
@w = constant [3 x i8] c"\03\FB\07"
@b = constant [1 x i32] [i32 100]
@bvar = global [1 x i32] zeroinitializer
@arena = global [8 x i8] zeroinitializer

define void @f() {
  %a = call i32 @arm_depthwise_conv_3x3_s8(ptr @c, ptr @p, ptr @q, ptr @in, ptr @arena, ptr @fd, ptr @w, ptr @bd, ptr @b, ptr @in, ptr getelementptr (i8, ptr @arena, i32 4))
  %b = call i32 @arm_depthwise_conv_3x3_s8(ptr @c, ptr @p, ptr @q, ptr @in, ptr @arena, ptr @fd, ptr @w, ptr @bd, ptr @bvar, ptr @in, ptr getelementptr (i8, ptr @arena, i32 4))
  ret void
}

declare i32 @arm_depthwise_conv_3x3_s8(ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr)
"""


def test_constant_depthwise_calls_the_kernel_with_pairs_and_folded_bias():
    text, notes = relayout_depthwise.depthwise(MODULE, lambda line: False)
    calls = [ln for ln in text.splitlines() if " call " in ln]
    # out, in, weights, per-channel records, plane; in 1x4x1, filter 1x3, stride 1x1, padding 0/1,
    # out 1x4, plane 1x6, pad value 128 (-input_offset), fast, output offset, activation
    assert calls[0] == ("  %a = call i32 @libjit_dwconv_s8(ptr getelementptr (i8, ptr @arena, i32 4), ptr @arena, "
                        "ptr @libjit.dwconv.0.w16, ptr @libjit.dwconv.0.rq, ptr @libjit.dwconv.plane, i32 1, i32 4, "
                        "i32 1, i32 1, i32 3, i32 1, i32 1, i32 0, i32 1, i32 1, i32 4, i32 1, i32 6, i32 -128, "
                        "i32 1, i32 -4, i32 -128, i32 127)")
    assert "@arm_depthwise_conv_3x3_s8(" in calls[1]  # a mutable bias: left alone
    # weights doubled (fast form): (w0,w1), then (w1,w2); bias 2 * (100 + 128 * 5); K, rs
    assert "@libjit.dwconv.0.w16 = internal unnamed_addr constant [4 x i16] [i16 6, i16 -10, i16 -10, i16 14], " \
           "align 4" in text
    assert "@libjit.dwconv.0.rq = internal unnamed_addr constant [4 x i32] [i32 1480, i32 1073741824, " \
           "i32 -14, i32 2], align 4" in text
    assert "@libjit.dwconv.plane = internal global [6 x i16] zeroinitializer, align 4" in text
    assert "declare i32 @libjit_dwconv_s8(" + "ptr, " * 5 + ", ".join(["i32"] * 18) + ")" in text
    assert [n.kernel for n in notes] == ["libjit_dwconv_s8", ""]
    assert "SMMULR (proven equal for every channel)" in notes[0].log_line()
    assert "left on arm_depthwise_conv_3x3_s8 (bias not a constant global)" in notes[1].log_line()


def test_what_the_kernel_does_not_cover_is_left_alone():
    for params, reason in (("i32 2, i32 1, i32 1, i32 1, i32 0, i32 1, i32 1", "channel multiplier 2"),
                           ("i32 1, i32 3, i32 1, i32 1, i32 0, i32 1, i32 1", "stride 1x3"),
                           ("i32 1, i32 1, i32 1, i32 1, i32 0, i32 2, i32 1", "dilation 1x2")):
        module = MODULE.replace("i32 1, i32 1, i32 1, i32 1, i32 0, i32 1, i32 1", params, 1)
        text, notes = relayout_depthwise.depthwise(module, lambda line: False)
        assert text == module and all(not n.kernel for n in notes)
        assert reason in notes[0].log_line()


def test_relayout_runs_the_rule_on_any_cmsis_nn_and_skips_shape_only_calls():
    text, notes = relayout.relayout(MODULE, shim=False)  # our kernel: a checkout gets it too
    assert "@libjit_dwconv_s8(" in text
    from specializer.optimize import callsites
    numbered = callsites.number(MODULE)
    text, notes = relayout.relayout(numbered, True, frozenset({1}))
    assert "@libjit_dwconv_s8(" not in text


def test_a_channel_multiplier_calls_the_mult_kernel_with_pairs_per_output_channel():
    # one input channel, multiplier 2: filter [1][1][3][2] (tap-major), two biases and scales
    module = (MODULE.replace("i32 -4, i32 1, i32 1,", "i32 -4, i32 2, i32 1,", 1)
              .replace("@m = private unnamed_addr constant [1 x i32] [i32 1073741824]",
                       "@m = private unnamed_addr constant [2 x i32] [i32 1073741824, i32 1073741824]")
              .replace("@s = private unnamed_addr constant [1 x i32] [i32 -2]",
                       "@s = private unnamed_addr constant [2 x i32] [i32 -2, i32 -2]")
              .replace("@fd = private unnamed_addr constant [4 x i32] [i32 1, i32 1, i32 3, i32 1]",
                       "@fd = private unnamed_addr constant [4 x i32] [i32 1, i32 1, i32 3, i32 2]\n"
                       "@od = private unnamed_addr constant [4 x i32] [i32 1, i32 1, i32 4, i32 2]")
              .replace('@w = constant [3 x i8] c"\\03\\FB\\07"', '@w = constant [6 x i8] c"\\03\\01\\FB\\02\\07\\FF"')
              .replace("@b = constant [1 x i32] [i32 100]", "@b = constant [2 x i32] [i32 100, i32 -50]")
              .replace("ptr @b, ptr @in,", "ptr @b, ptr @od,"))
    text, notes = relayout_depthwise.depthwise(module, lambda line: False)
    calls = [ln for ln in text.splitlines() if " call " in ln]
    # the same arguments as libjit_dwconv_s8's (ch is the input's 1), then the multiplier
    assert calls[0] == ("  %a = call i32 @libjit_dwconv_mult_s8(ptr getelementptr (i8, ptr @arena, i32 4), ptr @arena, "
                        "ptr @libjit.dwconv.0.w16, ptr @libjit.dwconv.0.rq, ptr @libjit.dwconv.plane, i32 1, i32 4, "
                        "i32 1, i32 1, i32 3, i32 1, i32 1, i32 0, i32 1, i32 1, i32 4, i32 1, i32 6, i32 -128, "
                        "i32 1, i32 -4, i32 -128, i32 127, i32 2)")
    # per output channel, doubled: taps (3,-5,7) then (1,2,-1); biases 2 * (b + 128 * sum(w))
    assert "@libjit.dwconv.0.w16 = internal unnamed_addr constant [8 x i16] [i16 6, i16 -10, i16 -10, i16 14, " \
           "i16 2, i16 4, i16 4, i16 -2], align 4" in text
    assert "@libjit.dwconv.0.rq = internal unnamed_addr constant [8 x i32] [i32 1480, i32 1073741824, " \
           "i32 -14, i32 2, i32 412, i32 1073741824, i32 -14, i32 2], align 4" in text
    assert "declare i32 @libjit_dwconv_mult_s8(" + "ptr, " * 5 + ", ".join(["i32"] * 19) + ")" in text
    assert "declare i32 @libjit_dwconv_s8(" not in text
    assert [n.kernel for n in notes] == ["libjit_dwconv_mult_s8", ""]
    assert "weights as int16 SMLAD pairs 6 -> 16 bytes" in notes[0].log_line()


def test_an_int4_depthwise_call_is_the_int8_one_of_its_weights():
    """arm_depthwise_conv_s4's weights (3, -5, 7 packed: 0xB3 0x07) unpacked: the same kernel call
    and constants as the s8 call's; depthwise weights are a few bytes a channel, always unpacked."""
    s4 = (MODULE.replace("arm_depthwise_conv_3x3_s8", "arm_depthwise_conv_s4")
          .replace(r'@w = constant [3 x i8] c"\03\FB\07"', r'@w = constant [2 x i8] c"\B3\07"'))
    text, notes = relayout_depthwise.depthwise(s4, lambda line: False)
    want, _ = relayout_depthwise.depthwise(MODULE, lambda line: False)
    kernel = lambda t: [ln for ln in t.splitlines() if " call " in ln or ln.startswith("@libjit")]  # noqa: E731
    assert kernel(text)[0] == kernel(want)[0] and kernel(text)[2:] == kernel(want)[2:]  # [1]: the other call's name
    assert notes[0].kernel == "libjit_dwconv_s8" and notes[0].weight_bytes == (2, 8)
