"""relayout_conv.convs: the all-args rule sending int8 conv and fully connected calls with
constant weights to libjit_conv_s8 (a dense layer as a 1x1 conv over its batch rows); the calls
it cannot take are left alone with the reason."""

from specializer.optimize import relayout_conv

# a dense layer 4 -> 3 at batch 1: params {input_offset, filter_offset, output_offset, act min/max},
# quant {multiplier, shift} for every output
FC = r"""@p = private unnamed_addr constant [5 x i32] [i32 128, i32 0, i32 -5, i32 -128, i32 127], align 4
@q = private unnamed_addr constant [2 x i32] [i32 1073741824, i32 -3], align 4
@in = private unnamed_addr constant [4 x i32] [i32 1, i32 1, i32 1, i32 4], align 4
@fd = private unnamed_addr constant [4 x i32] [i32 4, i32 1, i32 1, i32 3], align 4
@bd = private unnamed_addr constant [4 x i32] [i32 1, i32 1, i32 1, i32 3], align 4
@od = private unnamed_addr constant [4 x i32] [i32 1, i32 1, i32 1, i32 3], align 4
@w = constant [12 x i8] c"\01\02\03\04\05\06\07\08\09\0A\0B\0C"
@b = constant [3 x i32] [i32 10, i32 20, i32 30]
@arena = global [8 x i8] zeroinitializer

define void @f() {
  %a = call i32 @arm_fully_connected_s8(ptr @c, ptr @p, ptr @q, ptr @in, ptr @arena, ptr @fd, ptr @w, ptr @bd, ptr @b, ptr @od, ptr getelementptr (i8, ptr @arena, i32 4))
  ret void
}

declare i32 @arm_fully_connected_s8(ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr)
"""


def test_dense_layer_is_a_one_pixel_conv_on_the_kernel():
    text, notes = relayout_conv.convs(FC, lambda line: False)
    call = next(ln for ln in text.splitlines() if " call " in ln)
    # out, in, weights, records, scratch, no index or constant row (every channel computed); in 1x1x4
    # -> 3 channels, all 3 computed, 1x1 filter, stride 1, no padding, dilation 1, out 1x1, pad value
    # 128, fast, int8 panels in the packed form (one pixel: they cost no flash over int16 ones, and no
    # time), output offset, activation
    assert call == ("  %a = call i32 @libjit_conv_s8(ptr getelementptr (i8, ptr @arena, i32 4), ptr @arena, "
                    "ptr @libjit.conv.0.w, ptr @libjit.conv.0.rq, ptr @libjit.conv.cols, ptr null, ptr null, "
                    "i32 1, i32 1, i32 4, i32 3, i32 3, i32 1, i32 1, i32 1, i32 1, i32 0, i32 0, i32 1, i32 1, "
                    "i32 1, i32 1, i32 -128, i32 1, i32 2, i32 -5, i32 -128, i32 127)")
    # packed: per tap of each word (channel 1's + 128, channel 0's), taps 0/2 then 1/3; channel 2 with
    # a zero partner (0 + 128)
    assert "@libjit.conv.0.w = internal unnamed_addr constant [16 x i8] [i8 -123, i8 1, i8 -121, i8 3, i8 -122, " \
           "i8 2, i8 -120, i8 4, i8 -128, i8 9, i8 -128, i8 11, i8 -128, i8 10, i8 -128, i8 12], align 4" in text
    # per output: bias + 128 * sum(w) (the kernel doubles the sum: int8 cannot hold 2w), the one
    # multiplier, K = 2^2 - 5 * 2^3, rs 3
    assert "[12 x i32] [i32 1290, i32 1073741824, i32 -36, i32 3, i32 3348, i32 1073741824, i32 -36, i32 3, " \
           "i32 5406, i32 1073741824, i32 -36, i32 3]" in text
    assert "@libjit.conv.cols = internal global [8 x i8] zeroinitializer, align 4" in text  # one group of one pixel
    assert [n.kernel for n in notes] == ["libjit_conv_s8"]


def test_a_channel_no_input_changes_is_written_from_the_constant_row():
    # channel 2's bias saturates it: (acc + 10^7) / 16 > 127 for every input, so it is always 127
    text, notes = relayout_conv.convs(FC.replace("i32 30]", "i32 10000000]"), lambda line: False)
    call = next(ln for ln in text.splitlines() if " call " in ln)
    assert ("ptr @libjit.conv.cols, ptr @libjit.conv.0.index, ptr @libjit.conv.0.fill, i32 1, i32 1, i32 4, "
            "i32 3, i32 2, ") in call  # 3 output channels, 2 computed
    assert "@libjit.conv.0.index = internal unnamed_addr constant [2 x i16] [i16 0, i16 1], align 4" in text
    assert "@libjit.conv.0.fill = internal unnamed_addr constant [3 x i8] [i8 0, i8 0, i8 127], align 4" in text
    # panels and records of the two computed channels only (one pixel: a step of four, two of them zeros)
    assert "@libjit.conv.0.w = internal unnamed_addr constant [16 x i8] [i8 -123, i8 1, i8 -121, i8 3, i8 -122, " \
           "i8 2, i8 -120, i8 4, i8 0, i8 0, i8 0, i8 0, i8 0, i8 0, i8 0, i8 0], align 4" in text
    assert "[8 x i32] [i32 1290, i32 1073741824, i32 -36, i32 3, i32 3348, i32 1073741824, i32 -36, i32 3]" in text
    assert "1 of 3 output channels the same value for every input" in notes[0].log_line()


def test_what_the_kernel_does_not_cover_is_left_alone():
    for old, new, reason in (("i32 128, i32 0, i32 -5", "i32 128, i32 3, i32 -5", "weight offset 3"),
                             ("@b = constant", "@b = global", "bias not a constant global")):
        module = FC.replace(old, new, 1)
        text, notes = relayout_conv.convs(module, lambda line: False)
        assert text == module and not notes[0].kernel and reason in notes[0].log_line()


# the same dense layer with int4 weights: arm_fully_connected_s4, the 12 weights packed in 6 bytes
W4 = [1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4]
FC4 = (FC.replace("arm_fully_connected_s8", "arm_fully_connected_s4")
       .replace(r'@w = constant [12 x i8] c"\01\02\03\04\05\06\07\08\09\0A\0B\0C"',
                r'@w = constant [6 x i8] c"\21\43\65\87\A9\CB"'))
FC8 = FC.replace(r'c"\01\02\03\04\05\06\07\08\09\0A\0B\0C"', r'c"\01\02\03\04\05\06\07\F8\F9\FA\FB\FC"')


def _kernel_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if " call " in ln or ln.startswith("@libjit.conv")]


def test_an_int4_layer_within_the_budget_is_the_int8_layer_on_int8_panels():
    """unpacked (unpack4 3: panels up to 18 bytes for the 6 packed), an s4 call becomes exactly
    what the s8 call of the same weights becomes with int8 panels."""
    text, notes = relayout_conv.convs(FC4, lambda line: False, unpack4=3.0)
    want, _ = relayout_conv.convs(FC8, lambda line: False, widen=0)  # widen 0: int8 panels
    # int8 panels: two channel pairs of four taps (the third channel's partner zeros)
    assert _kernel_lines(text) == _kernel_lines(want) and "@libjit.conv.0.w = internal unnamed_addr constant [16 x i8]" \
        in "\n".join(_kernel_lines(text))
    assert notes[0].kernel == "libjit_conv_s8" and notes[0].narrow and notes[0].weight_bytes == (6, 16)


def test_an_int4_layer_past_the_budget_keeps_its_packed_weights():
    text, notes = relayout_conv.convs(FC4, lambda line: False)  # unpack4 1: 12 bytes of panels > 6
    assert text == FC4
    assert notes[0].kernel == "" and notes[0].callee == "arm_fully_connected_s4"
    assert "int4 weights kept packed" in notes[0].log_line()


def test_the_budget_goes_to_the_layers_with_the_most_output_pixels():
    from specializer.optimize.relayout_conv import Layer, Shape, _unpacked

    def layer(pixels: int, weights: int) -> Layer:  # two output channels: panels of weights bytes
        return Layer(Shape(1, pixels, weights // 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1, pixels), None, 0, 0, (-128, 127),
                     True)

    found = [(0, layer(1, 400)), (1, layer(25, 100)), (2, layer(9, 100)), (3, layer(25, 300))]
    # 900 weights, 450 packed bytes: unpack4 1 -> 450 bytes of panels: 25 px (100), 25 px (300), not 9 px (+100)
    assert _unpacked(found, 1.0) == {1, 3}
    assert _unpacked(found, 2.0) == {0, 1, 2, 3} and _unpacked(found, 0.0) == set()
