"""One int8 block per function, odd shapes (channels not a multiple of 4, padding on every side,
stride 2), random weights and requantization at fixed seeds: what tests/test_cmsis_lowering.py
captures, lowers onto CMSIS-NN and runs on QEMU."""
import numpy as np

from specializer.quant import blocks
from specializer.quant.fixedpoint import quantize_multiplier
from specializer.quant.params import ConvParams, DepthwiseParams, FullyConnectedParams

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
