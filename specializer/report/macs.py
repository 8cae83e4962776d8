"""Multiply-accumulates of a captured model: what its libjit dot and convolution calls and its
CMSIS-NN s8 calls compute.

Read off the calls capture emits (specializer/capture/libcalls.py, specializer/capture/cmsis_calls.py): a libjit
kernel's constant shape arguments, a CMSIS-NN call's constant `cmsis_nn_dims` globals (filter
and output dims, found by parameter name in CMSIS-NN v7.0.0's signature, cmsis_api.py). So the
count is the model's, not any variant's: est. cycles / MAC compares variants and models on one
scale. Dots XLA keeps as its own IR are not counted (capture sends every standalone dot to
libjit; dots fused into elementwise kernels are small).
"""

from __future__ import annotations

import re

from specializer.library.cmsis_api import FUNCTIONS
from specializer.llvm import irtext
from specializer.llvm.irtext import direct_calls, global_arg

KERNELS = ("libjit_matmul_f32", "libjit_matmul_s8_s32", "libjit_matmul_s32", "libjit_conv2d_f32",
           "libjit_conv_transpose2d_f32", "libjit_dwconv_mult_f32")

# CMSIS-NN call -> MACs from its constant arguments: d(parameter name) is that argument's global
# (dims {n, h, w, c}, an all-int32 parameter struct), raising KeyError where it is not constant


def _conv(d) -> int:  # filter [C_OUT, KH, KW, CK]: every output value sums KH * KW * CK products
    f, o = d("filter_dims"), d("output_dims")
    return o[0] * o[1] * o[2] * o[3] * f[1] * f[2] * f[3]


def _depthwise(d) -> int:  # filter [1, KH, KW, C_OUT]: KH * KW products per output value
    f, o = d("filter_dims"), d("output_dims")
    return o[0] * o[1] * o[2] * o[3] * f[1] * f[2]


def _fully_connected(d) -> int:  # filter [ACCUM_DEPTH, -, -, C_OUT], output [BATCH, -, -, C_OUT]
    f, o = d("filter_dims"), d("output_dims")
    return o[0] * f[0] * o[3]


def _transpose_conv(d) -> int:
    """filter [C_OUT, KH, KW, C_IN]; params {input_offset, output_offset, stride {w, h}, padding
    {w, h}, ...}: the products of the stride-1 convolution of the stuffed input that land on
    real pixels (transposed_conv_macs), low padding k - 1 - pad."""
    i, f, o, t = d("input_dims"), d("filter_dims"), d("output_dims"), d("transpose_conv_params")
    sw, sh, pw, ph = t[2:6]
    return transposed_conv_macs(i[0], i[1], i[2], i[3], o[1], o[2], o[3], f[1], f[2], 1, 1,
                                f[1] - 1 - ph, f[2] - 1 - pw, 1, 1, 1, sh, sw, 0)


def _svdf(d) -> int:
    """input [BATCH, INPUT_SIZE]; feature weights [FILTERS, INPUT_SIZE], time weights [FILTERS,
    MEMORY]: each filter's feature product and its time dot, per batch."""
    i, f, t = d("input_dims"), d("weights_feature_dims"), d("weights_time_dims")
    return i[0] * f[0] * (f[1] + t[1])


def _lstm(d) -> int:
    """params {time_major, batch_size, time_steps, input_size, hidden_size, ...}: four gates'
    input and hidden products per batch and step."""
    _, batch, time, n_in, hidden = d("params")[:5]
    return batch * time * 4 * hidden * (n_in + hidden)


CMSIS_NN = {
    "arm_convolve_wrapper_s8": _conv, "arm_convolve_s8": _conv,
    # the forms the wrapper picks (capture calls the picked one directly): the same sums
    "arm_convolve_1x1_s8_fast": _conv, "arm_convolve_1x1_s8": _conv, "arm_convolve_1_x_n_s8": _conv,
    "arm_depthwise_conv_wrapper_s8": _depthwise, "arm_depthwise_conv_s8": _depthwise,
    "arm_depthwise_conv_3x3_s8": _depthwise, "arm_depthwise_conv_s8_opt": _depthwise,
    "arm_fully_connected_s8": _fully_connected,
    # int4 weights: the same sums
    "arm_convolve_s4": _conv, "arm_depthwise_conv_s4": _depthwise, "arm_fully_connected_s4": _fully_connected,
    # int16 activations (16x8): the same sums
    "arm_convolve_s16": _conv, "arm_depthwise_conv_s16": _depthwise, "arm_fully_connected_s16": _fully_connected,
    "arm_transpose_conv_s8": _transpose_conv,
    "arm_svdf_state_s16_s8": _svdf,
    "arm_svdf_s8": _svdf,
    "arm_lstm_unidirectional_s8": _lstm,
}
_PARAMS = {f.name: [n for _, n in f.params] for f in FUNCTIONS}


def count(text: str) -> int:
    """MACs of every libjit dot/convolution call and CMSIS-NN s8 layer call in a captured
    model's IR (0 if none)."""
    lines = text.split("\n")
    total = 0
    for call in direct_calls(lines, KERNELS):
        if call.callee.startswith("libjit_matmul"):
            v = call.ints(3, 4)
            if v:
                batch, rows, k, n = v
                total += batch * rows * k * n
        elif call.callee == "libjit_conv_transpose2d_f32":
            v = call.ints(3, 19)
            if v:
                total += transposed_conv_macs(*v)
        elif call.callee == "libjit_dwconv_mult_f32":
            v = call.ints(3, 9)  # no scratch; one input channel per output
            if v:
                batch, _, _, _, out_h, out_w, out_c, k_h, k_w = v
                total += batch * out_h * out_w * out_c * k_h * k_w
        else:
            v = call.ints(4, 16)
            if v:
                batch, _, _, in_c, out_h, out_w, out_c, k_h, k_w = v[:9]
                groups = v[15]
                total += batch * out_h * out_w * out_c * k_h * k_w * (in_c // max(groups, 1))
    return total + cmsis_nn(lines)


def _taps_on_input(out: int, stride: int, pad: int, k: int, dil: int, base_dil: int, size: int) -> int:
    """(output, tap) pairs along one axis whose tap lands on an input element of a dilated input."""
    return sum(1 for o in range(out) for t in range(k)
               if (p := o * stride - pad + t * dil) >= 0 and p % base_dil == 0 and p // base_dil < size)


def transposed_conv_macs(batch, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h, stride_w,
                         pad_top, pad_left, dil_h, dil_w, groups, bdil_h, bdil_w, _reverse) -> int:
    """The products a convolution of a dilated input computes: only taps on real input pixels
    (the zeros between them are not multiplied; libjit_conv_transpose2d_f32 skips them too)."""
    rows = _taps_on_input(out_h, stride_h, pad_top, k_h, max(dil_h, 1), max(bdil_h, 1), in_h)
    cols = _taps_on_input(out_w, stride_w, pad_left, k_w, max(dil_w, 1), max(bdil_w, 1), in_w)
    return batch * rows * cols * (in_c // max(groups, 1)) * out_c


def cmsis_nn(lines: list[str]) -> int:
    """MACs of the CMSIS-NN layer calls whose dims (and parameters) are constant globals."""
    ints = {}  # constant i32 arrays: dims {n, h, w, c} and all-int32 parameter structs
    for line in lines:
        g = irtext.global_def(line) if line.startswith("@") else None
        if g and g.kind == "constant" and g.type.endswith(" x i32]"):
            values = irtext.array_elements(line[g.init_at:], "i32")
            if values and all(v.lstrip("-").isdigit() for v in values):
                ints[g.name] = tuple(map(int, values))
        elif g and g.kind == "constant" and g.type.startswith("{ i32"):
            # a struct beginning with int32 fields: those first, in order (the i32 offsets inside
            # its pointer fields' getelementptrs follow them; nothing reads that far)
            ints[g.name] = tuple(int(v) for v in re.findall(r"\bi32 (-?\d+)", line[g.init_at:]))
    total = 0
    for call in direct_calls(lines, tuple(CMSIS_NN)):
        params = _PARAMS[call.callee]
        if len(call.args) != len(params):
            continue

        def d(name: str) -> tuple[int, ...]:
            return ints[global_arg(call.args[params.index(name)])]
        try:
            total += CMSIS_NN[call.callee](d)
        except (KeyError, IndexError):  # an argument that is not a constant global of that form
            continue
    return total
