"""One int8 block per function, odd shapes (channels not a multiple of 4, padding on every side,
stride 2), random weights and requantization at fixed seeds: what tests/test_cmsis_lowering.py
captures, lowers onto CMSIS-NN and runs on QEMU."""
import numpy as np

from specializer.quant import blocks
from specializer.quant.fixedpoint import quantize_multiplier
from specializer.quant.params import (AddParams, ConvParams, DepthwiseParams, FullyConnectedParams,
                                      PoolParams)
from specializer.quant.ptq import softmax_params

_rng = np.random.default_rng(11)


def _i8(*shape):
    return _rng.integers(-128, 128, size=shape).astype(np.int8)


def _quant(n: int, depth: int):
    # scales that keep most outputs inside int8 for random int8 data over `depth` taps
    pairs = [quantize_multiplier(s) for s in _rng.uniform(0.3, 1.5, n) / (128.0 * np.sqrt(depth))]
    return tuple(m for m, _ in pairs), tuple(s for _, s in pairs)


def _conv_params():
    m, s = _quant(5, 3 * 3 * 3)
    return ConvParams(input_dims=(1, 9, 7, 3), filter_dims=(5, 3, 3, 3),
                      output_dims=(1, blocks.conv_output_size(9, 3, 2, (1, 2)),
                                   blocks.conv_output_size(7, 3, 2, (2, 1)), 5),
                      stride=(2, 2), padding=((1, 2), (2, 1)), input_offset=3, output_offset=-5,
                      activation=(-100, 120), multipliers=m, shifts=s)


_CONV = _conv_params()


def conv(x, w, b):
    return blocks.conv2d(x, w, b, _CONV)


conv.example_inputs = {"x": _i8(1, 9, 7, 3)}
conv.weights = {"w": _i8(5, 3, 3, 3), "b": _rng.integers(-3000, 3000, 5).astype(np.int32)}


def _dw_params(ch_mult: int):
    cout = 6 * ch_mult
    m, s = _quant(cout, 9)
    return DepthwiseParams(input_dims=(1, 8, 7, 6), filter_dims=(1, 3, 3, cout),
                           output_dims=(1, blocks.conv_output_size(8, 3, 2, (2, 1)),
                                        blocks.conv_output_size(7, 3, 2, (1, 2)), cout),
                           ch_mult=ch_mult, stride=(2, 2), padding=((2, 1), (1, 2)), input_offset=-7,
                           output_offset=4, activation=(-128, 127), multipliers=m, shifts=s)


_DW = _dw_params(1)
_DW2 = _dw_params(2)


def depthwise(x, w, b):
    return blocks.depthwise_conv2d(x, w, b, _DW)


depthwise.example_inputs = {"x": _i8(1, 8, 7, 6)}
depthwise.weights = {"w": _i8(1, 3, 3, 6), "b": _rng.integers(-2000, 2000, 6).astype(np.int32)}


def depthwise_mult2(x, w):
    return blocks.depthwise_conv2d(x, w, None, _DW2)


depthwise_mult2.example_inputs = {"x": _i8(1, 8, 7, 6)}
depthwise_mult2.weights = {"w": _i8(1, 3, 3, 12)}


def _fc_params(per_channel: bool):
    m, s = _quant(7 if per_channel else 1, 13)
    return FullyConnectedParams(batch=2, in_features=13, out_features=7, input_offset=-9, output_offset=2,
                                activation=(-128, 127), multipliers=m, shifts=s)


_FC = _fc_params(False)
_FC_PER_CHANNEL = _fc_params(True)


def dense(x, w, b):
    return blocks.fully_connected(x, w, b, _FC)


dense.example_inputs = {"x": _i8(2, 13)}
dense.weights = {"w": _i8(7, 13), "b": _rng.integers(-3000, 3000, 7).astype(np.int32)}


def dense_per_channel(x, w, b):
    return blocks.fully_connected(x, w, b, _FC_PER_CHANNEL)


dense_per_channel.example_inputs = dense.example_inputs
dense_per_channel.weights = dense.weights


def _pointwise_params():
    m, s = _quant(7, 8)
    return ConvParams(input_dims=(1, 6, 5, 8), filter_dims=(7, 1, 1, 8),
                      output_dims=(1, blocks.conv_output_size(6, 1, 2, (1, 1)),
                                   blocks.conv_output_size(5, 1, 2, (1, 2)), 7),
                      stride=(2, 2), padding=((1, 1), (1, 2)), input_offset=-2, output_offset=6,
                      activation=(-128, 127), multipliers=m, shifts=s)


_PW = _pointwise_params()


def pointwise(x, w, b):
    # depth 8: the SMLAD path over whole groups of 4 taps; 7 channels: pairs, then one
    return blocks.conv2d(x, w, b, _PW)


pointwise.example_inputs = {"x": _i8(1, 6, 5, 8)}
pointwise.weights = {"w": _i8(7, 1, 1, 8), "b": _rng.integers(-3000, 3000, 7).astype(np.int32)}


# ---------------------------------------------------------------- blocks without weights

def _pool_params(kind: str, input_dims, filt, stride, padding, activation):
    n, h, w, c = input_dims
    out = (n, blocks.conv_output_size(h, filt[0], stride[0], padding[0]),
           blocks.conv_output_size(w, filt[1], stride[1], padding[1]), c)
    return PoolParams(kind=kind, input_dims=input_dims, filter=filt, output_dims=out, stride=stride,
                      padding=padding, activation=activation)


# 6 channels: one group of 4, then 2; padding on every side, stride 2
_AVG = _pool_params("avg", (1, 9, 7, 6), (3, 3), (2, 2), ((1, 2), (2, 1)), (-100, 120))
# 17 x 16 = 272 pixels: over the 256 the 16-bit sums hold, so the int32 scratch path
_GAP = _pool_params("avg", (2, 17, 16, 7), (17, 16), (1, 1), ((0, 0), (0, 0)), (-128, 127))
_MAX = _pool_params("max", (1, 8, 7, 7), (2, 3), (2, 2), ((1, 0), (1, 1)), (-50, 100))


def avgpool(x):
    return blocks.avg_pool(x, _AVG)


avgpool.example_inputs = {"x": _i8(1, 9, 7, 6)}
avgpool.weights = {}


def avgpool_global(x):
    return blocks.avg_pool(x, _GAP)


# a bias toward positive values so the window means spread over a few dozen values
avgpool_global.example_inputs = {"x": np.clip(_rng.normal(0, 60, (2, 17, 16, 7)) +
                                             np.arange(7) * 10 - 30, -128, 127).astype(np.int8)}
avgpool_global.weights = {}


def maxpool(x):
    return blocks.max_pool(x, _MAX)


maxpool.example_inputs = {"x": _i8(1, 8, 7, 7)}
maxpool.weights = {}


def _add_params():
    # TFLite's int8 add: inputs rescaled to twice the larger input scale, left_shift 20
    s1, s2, so = 0.05, 0.031, 0.07
    twice = 2 * max(s1, s2)
    m1, sh1 = quantize_multiplier(s1 / twice)
    m2, sh2 = quantize_multiplier(s2 / twice)
    mo, sho = quantize_multiplier(twice / ((1 << 20) * so))
    return AddParams(shape=(1, 5, 3, 7), input_1_offset=9, input_1_mult=m1, input_1_shift=sh1,
                     input_2_offset=-17, input_2_mult=m2, input_2_shift=sh2, left_shift=20,
                     out_offset=-3, out_mult=mo, out_shift=sho, activation=(-128, 110))


_ADD = _add_params()


def add(x1, x2):
    # 105 values: 26 words, then one
    return blocks.add(x1, x2, _ADD)


add.example_inputs = {"x1": _i8(1, 5, 3, 7), "x2": _i8(1, 5, 3, 7)}
add.weights = {}

_SOFTMAX = softmax_params(0.0625, 3, 10)


def softmax(x):
    return blocks.softmax(x, _SOFTMAX)


softmax.example_inputs = {"x": _i8(3, 10)}
softmax.weights = {}


# ---------------------------------------------------------------- the wrappers' fast forms
# (after the blocks above, so that their random values stay what they were)

def _conv_form(input_dims, cout, k, stride, padding):
    n, h, w, c = input_dims
    m, s = _quant(cout, k[0] * k[1] * c)
    out = (n, blocks.conv_output_size(h, k[0], stride[0], padding[0]),
           blocks.conv_output_size(w, k[1], stride[1], padding[1]), cout)
    p = ConvParams(input_dims=input_dims, filter_dims=(cout, *k, c), output_dims=out, stride=stride,
                   padding=padding, input_offset=-11, output_offset=3, activation=(-120, 127), multipliers=m,
                   shifts=s)

    def fn(x, w, b):
        return blocks.conv2d(x, w, b, p)

    fn.example_inputs = {"x": _i8(*input_dims)}
    fn.weights = {"w": _i8(cout, *k, c), "b": _rng.integers(-3000, 3000, cout).astype(np.int32)}
    return fn


def _dw_form(input_dims, stride, padding):
    n, h, w, c = input_dims
    m, s = _quant(c, 9)
    out = (n, blocks.conv_output_size(h, 3, stride[0], padding[0]),
           blocks.conv_output_size(w, 3, stride[1], padding[1]), c)
    p = DepthwiseParams(input_dims=input_dims, filter_dims=(1, 3, 3, c), output_dims=out, ch_mult=1, stride=stride,
                        padding=padding, input_offset=5, output_offset=-2, activation=(-128, 127), multipliers=m,
                        shifts=s)

    def fn(x, w, b):
        return blocks.depthwise_conv2d(x, w, b, p)

    fn.example_inputs = {"x": _i8(*input_dims)}
    fn.weights = {"w": _i8(1, 3, 3, c), "b": _rng.integers(-2000, 2000, c).astype(np.int32)}
    return fn


# arm_convolve_1x1_s8_fast: 25 pixels (pairs, then one), depth 10 (groups of 4, then 2), 7 channels
pointwise_fast = _conv_form((1, 5, 5, 10), 7, (1, 1), (1, 1), ((0, 0), (0, 0)))
# arm_convolve_1x1_s8: stride 2 x 3
pointwise_strided = _conv_form((1, 7, 8, 6), 5, (1, 1), (2, 3), ((0, 0), (0, 0)))
# 1x1 with bottom / right padding: not the wrapper (its 1x1 forms assume none), arm_convolve_s8
pointwise_padded = _conv_form((1, 4, 5, 6), 5, (1, 1), (1, 1), ((0, 1), (0, 2)))
# arm_convolve_1_x_n_s8: input height 1, stride.w * C_IN a multiple of 4
conv_1xn = _conv_form((1, 1, 9, 4), 5, (1, 3), (1, 1), ((0, 0), (1, 1)))
# arm_depthwise_conv_3x3_s8: padding 1 on every side; 6 channels (one group of 4, then 2)
depthwise_3x3 = _dw_form((1, 6, 5, 6), (1, 1), ((1, 1), (1, 1)))
# stride 2, TensorFlow's SAME padding (the odd pixel at the end)
depthwise_3x3_s2 = _dw_form((1, 7, 8, 5), (2, 2), ((0, 1), (0, 1)))
# right padding 2: the last window's middle column is right of the input; not the wrapper
depthwise_3x3_right2 = _dw_form((1, 5, 5, 4), (1, 1), ((1, 1), (1, 2)))


# ---------------------------------------------------------------- the activation blocks in one model
# (test_cmsis_lowering builds it in every variant once, not each block alone)


def activations(xa, xg, xm, x1, x2, xs):
    return avgpool(xa), avgpool_global(xg), maxpool(xm), add(x1, x2), softmax(xs)


activations.example_inputs = {"xa": avgpool.example_inputs["x"], "xg": avgpool_global.example_inputs["x"],
                              "xm": maxpool.example_inputs["x"], "x1": add.example_inputs["x1"],
                              "x2": add.example_inputs["x2"], "xs": softmax.example_inputs["x"]}
activations.weights = {}
