"""TFLite's int8 ops as specializer.quant's blocks (CMSIS-NN's s8 semantics, which TFLite Micro's
reference kernels share), each block's parameters derived from the file as TFLite Micro's Prepare
derives them:
- conv and depthwise (PopulateConvolutionQuantizationParams): per channel, the multiplier of
  double(input scale) * double(filter scale) / double(output scale); a per-tensor filter the same;
- fully connected, per tensor (GetQuantizedConvolutionMultipler): the input and filter scales'
  product taken in float32, then divided in double;
- every multiplier by TFLite's QuantizeMultiplier: a shift below -31 flushes to zero, one above
  30 saturates;
- fused activations (CalculateActivationRangeQuantized): zero point + round(bound / scale), the
  division in float32, halves away from zero;
- ADD and SUB: inputs to twice the larger input scale, left shift 20; MUL: the input scales'
  product over the output scale, in double; SOFTMAX: PreprocessSoftmaxScaling with the file's
  beta (an INT16 output: TFLite's int8 -> int16 softmax, arm_softmax_s8_s16);
- INT4 filters of conv, depthwise and fully connected: the blocks' int4 weights (weight_bits=4),
  kept packed as the file packs them;
- 16x8 files (INT16 activations, zero points 0; INT8 filters; INT64 biases, carried as
  blocks.bias_words, or INT32 ones: bias_bits=32): CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
  AVERAGE_POOL_2D, MAX_POOL_2D, ADD (left shift 15, TFLite Micro's for int16), SUB, MUL and RESHAPE
  as the int16 blocks (activation_bits=16); SOFTMAX (output scale 1/32768) as softmax_s16,
  TFLite's table-driven int16 softmax; the movement ops (tflite_movement.py) on int16 values;
  LOGISTIC, TANH and LEAKY_RELU in tflite_int8_activations.py.
"""

from __future__ import annotations

import math

import numpy as np

from specializer.importers import tflite_movement
from specializer.importers.tflite_file import ACTIVATION_NAMES, TensorRecord
from specializer.importers.tflite_layer import (Layer, OpContext, Pair, broadcast_operands, check_dense_options,
                                                filter_and_bias, mean_axes, nhwc, nhwc_out, padding, pool_window,
                                                reshape, second_input, stride_dilation, transpose_conv_inputs)
from specializer.quant import blocks
from specializer.quant.fixedpoint import quantize_multiplier, tflite_round
from specializer.quant.graph import QuantizeError
from specializer.quant.params import (AddParams, ConvParams, DepthwiseParams, FullyConnectedParams, MeanParams,
                                      MulParams, PoolParams, SubParams, TransposeConvParams, int_range)
from specializer.quant.ptq import ADD_LEFT_SHIFT, ADD_LEFT_SHIFT_S16, softmax_params, softmax_s16_params

SOFTMAX_OUT_SCALE, SOFTMAX_OUT_ZERO_POINT = 1 / 256, -128
SOFTMAX_S16_OUT_SCALE = 1 / 32768
INT32_TYPE = 2  # TFLite's TensorType INT32 (an options table's quantized_bias_type)


def tflite_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: as quantize_multiplier, but a shift above 30 saturates to
    (2**31 - 1, 30) instead of being refused (TFLite Micro runs such a layer)."""
    try:
        return quantize_multiplier(real)
    except ValueError:
        if math.isfinite(real) and real > 0:
            return (1 << 31) - 1, 30
        raise


def per_tensor(c: OpContext, t: TensorRecord, what: str) -> tuple[float, int]:
    if t.quant is None or len(t.quant.scales) != 1:
        raise c.refuse(f"{what} (tensor {t.index}) needs one scale and zero point (per-tensor {t.type.lower()})")
    return t.quant.scales[0], t.quant.zero_points[0]


def _quantize_bound(value: float, scale: float, zero_point: int) -> int:
    v = float(np.float32(value) / np.float32(scale))
    return zero_point + tflite_round(v)


_BOUNDS = {"NONE": None, "RELU": (0.0, None), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}


def activation(c: OpContext, scale: float, zero_point: int) -> Pair:
    """The op's fused activation as the int8 (an INT16 output: int16) output's clamp."""
    name = ACTIVATION_NAMES.get(c.options["fusedActivationFunction"], str(c.options["fusedActivationFunction"]))
    if name not in _BOUNDS:
        raise c.refuse(f"fused activation {name} is not supported")
    bottom, top = int_range(16 if c.out.type == "INT16" else 8)
    if _BOUNDS[name] is None:
        return bottom, top
    lo, hi = _BOUNDS[name]
    act = (max(bottom, _quantize_bound(lo, scale, zero_point)),
           top if hi is None else min(top, _quantize_bound(hi, scale, zero_point)))
    if act[0] > act[1]:
        raise c.refuse(f"fused activation {name} leaves an empty output range {act}")
    return act


def _weight_scales(c: OpContext, w: TensorRecord, axis: int, n: int) -> tuple[float, ...]:
    q = w.quant
    if q is None:
        raise c.refuse(f"int8 filter (tensor {w.index}) has no quantization")
    if any(z != 0 for z in q.zero_points):
        raise c.refuse(f"filter (tensor {w.index}) has nonzero zero points (asymmetric weights)")
    if len(q.scales) == 1:
        return q.scales
    if len(q.scales) != n or q.axis != axis:
        raise c.refuse(f"filter (tensor {w.index}) has {len(q.scales)} scales along axis {q.axis}; "
                       f"expected 1, or {n} along axis {axis}")
    return q.scales


def _conv_multipliers(in_scale: float, w_scales, out_scale: float) -> tuple[tuple[int, ...], tuple[int, ...]]:
    ms = [tflite_multiplier(in_scale * s / out_scale) for s in w_scales]  # Python floats: double
    return tuple(m for m, _ in ms), tuple(s for _, s in ms)


def _io(c: OpContext, x: TensorRecord) -> tuple[float, int, float, int]:
    """(input scale, input zero point, output scale, output zero point)."""
    if c.out.type != x.type:
        raise c.refuse(f"output type {c.out.type} with an {x.type} input (the reader takes int8 -> int8 and "
                       "int16 -> int16)")
    return (*activation_quant(c, x, "input"), *activation_quant(c, c.out, "output"))


def activation_quant(c: OpContext, t: TensorRecord, what: str) -> tuple[float, int]:
    """An activation's scale and zero point (per tensor; 0 for INT16: 16x8 is symmetric)."""
    scale, zp = per_tensor(c, t, what)
    if t.type == "INT16" and zp != 0:
        raise c.refuse(f"{what} (tensor {t.index}) is INT16 with zero point {zp} (16x8 activations are "
                       "symmetric: zero point 0)")
    return scale, zp


def _s16(x: TensorRecord) -> dict:
    """The block's activation_bits for an INT16 (16x8) input: its extra parameters."""
    return {"activation_bits": 16} if x.type == "INT16" else {}


def same_quant(c: OpContext, x: TensorRecord, why: str) -> None:
    if per_tensor(c, x, "input") != per_tensor(c, c.out, "output"):
        raise c.refuse(f"input and output quantization differ ({why})")


def _filter(c: OpContext, out_axis: int) -> tuple[TensorRecord, tuple[str, ...], dict]:
    """filter_and_bias for the ops CMSIS-NN has s4 functions for: an INT4 filter (the record's
    data unpacked) becomes the block's packed weight, TFLite's packing being the block's.
    (filter, names, the block's weight_bits / activation_bits / bias_bits)."""
    w = c.tensor(1)
    bits = 4 if w is not None and w.type == "INT4" else 8
    s16 = c.tensor(0).type == "INT16"
    bias_bits = _bias_bits_16x8(c) if s16 else 64
    w, names = filter_and_bias(c, f"INT{bits}", "INT64" if s16 and bias_bits == 64 else "INT32", out_axis)
    if bits == 4:
        if s16:
            raise c.refuse("INT4 filter with INT16 activations (CMSIS-NN has no s16 x s4 function)")
        c.weights[names[0]] = blocks.pack_int4(c.weights[names[0]])
    if s16 and bias_bits == 64 and len(names) == 2:  # the int16 blocks take their int64 bias as int32 words
        c.weights[names[1]] = blocks.bias_words(c.weights[names[1]])
    extra = {"weight_bits": bits, **_s16(c.tensor(0))}
    return w, names, dict(extra, bias_bits=32) if bias_bits == 32 else extra


def _bias_bits_16x8(c: OpContext) -> int:
    """32 where TFLite Micro sums a 16x8 layer in int32 (an INT32 bias; no bias and the options'
    quantized_bias_type INT32: CONV_2D and FULLY_CONNECTED), else 64. Its int16 DEPTHWISE_CONV_2D
    reads any bias as INT64."""
    b = c.tensor(2)
    if b is not None:
        if b.type == "INT32" and c.op.name == "DEPTHWISE_CONV_2D":
            raise c.refuse("16x8 with an INT32 bias (TFLite Micro's int16 depthwise reads its bias as INT64)")
        return 32 if b.type == "INT32" else 64
    return 32 if c.options.get("quantizedBiasType") == INT32_TYPE else 64


def conv(c: OpContext, x: TensorRecord) -> Layer:
    in_s, in_zp, out_s, out_zp = _io(c, x)
    w, names, widths = _filter(c, 0)
    cout, kh, kw, cin = w.shape
    nhwc(c, x)
    if x.shape[3] != cin:
        raise c.refuse(f"grouped convolution (input {x.shape}, filter {w.shape}) is not supported")
    nhwc_out(c, x, cout, f"the filter {w.shape}")
    stride, dilation = stride_dilation(c)
    pad = padding(c, x.shape[1:3], (kh, kw), stride, dilation, c.out.shape[1:3])
    mults, shifts = _conv_multipliers(in_s, _weight_scales(c, w, 0, cout), out_s)
    p = ConvParams(input_dims=x.shape, filter_dims=w.shape, output_dims=c.out.shape, stride=stride, padding=pad,
                   input_offset=-in_zp, output_offset=out_zp, activation=activation(c, out_s, out_zp),
                   multipliers=mults, shifts=shifts, dilation=dilation, **widths)
    return c.layer(x, names, p, lambda a, wt, b=None: blocks.conv2d(a, wt, b, p))


def transpose_conv(c: OpContext, x: TensorRecord) -> Layer:
    """TRANSPOSE_CONV: per-channel multipliers as a conv's (TFLite Micro's transpose_conv Prepare
    calls the same PopulateConvolutionQuantizationParams)."""
    in_s, in_zp, out_s, out_zp = _io(c, x)
    w, names, stride, pad = transpose_conv_inputs(c, x, "INT8", "INT32")
    mults, shifts = _conv_multipliers(in_s, _weight_scales(c, w, 0, w.shape[0]), out_s)
    p = TransposeConvParams(input_dims=x.shape, filter_dims=w.shape, output_dims=c.out.shape, stride=stride,
                            padding=pad, input_offset=-in_zp, output_offset=out_zp,
                            activation=activation(c, out_s, out_zp), multipliers=mults, shifts=shifts)
    return c.layer(x, names, p, lambda a, wt, b=None: blocks.transpose_conv2d(a, wt, b, p))


def depthwise(c: OpContext, x: TensorRecord) -> Layer:
    in_s, in_zp, out_s, out_zp = _io(c, x)
    w, names, widths = _filter(c, 3)
    _, kh, kw, cout = w.shape
    mult = c.options["depthMultiplier"]
    nhwc(c, x)
    if w.shape[0] != 1 or cout != x.shape[3] * mult:
        raise c.refuse(f"filter {w.shape} does not match input {x.shape} with depth multiplier {mult}")
    nhwc_out(c, x, cout, f"the filter {w.shape}")
    stride, dilation = stride_dilation(c)
    pad = padding(c, x.shape[1:3], (kh, kw), stride, dilation, c.out.shape[1:3])
    mults, shifts = _conv_multipliers(in_s, _weight_scales(c, w, 3, cout), out_s)
    p = DepthwiseParams(input_dims=x.shape, filter_dims=w.shape, output_dims=c.out.shape, ch_mult=mult,
                        stride=stride, padding=pad, input_offset=-in_zp, output_offset=out_zp,
                        activation=activation(c, out_s, out_zp), multipliers=mults, shifts=shifts,
                        dilation=dilation, **widths)
    return c.layer(x, names, p, lambda a, wt, b=None: blocks.depthwise_conv2d(a, wt, b, p))


def dense(c: OpContext, x: TensorRecord) -> Layer:
    in_s, in_zp, out_s, out_zp = _io(c, x)
    check_dense_options(c)
    w, names, widths = _filter(c, 0)
    n_out, n_in = w.shape
    size = int(np.prod(x.shape))
    if size % n_in or int(np.prod(c.out.shape)) != size // n_in * n_out:
        raise c.refuse(f"input {x.shape} / output {c.out.shape} do not fit a filter {w.shape}")
    scales = _weight_scales(c, w, 0, n_out)
    if len(scales) == 1:
        m, s = tflite_multiplier(float(np.float32(in_s) * np.float32(scales[0])) / out_s)
        mults, shifts = (m,), (s,)
    else:
        mults, shifts = _conv_multipliers(in_s, scales, out_s)
    p = FullyConnectedParams(batch=size // n_in, in_features=n_in, out_features=n_out, input_offset=-in_zp,
                             output_offset=out_zp, activation=activation(c, out_s, out_zp), multipliers=mults,
                             shifts=shifts, **widths)
    out_shape = c.out.shape
    return c.layer(x, names, p, lambda a, wt, b=None: blocks.fully_connected(a.reshape(p.batch, n_in), wt, b, p)
                   .reshape(out_shape))


def avg_pool(c: OpContext, x: TensorRecord) -> Layer:
    return _pool(c, x, "avg", blocks.avg_pool)


def max_pool(c: OpContext, x: TensorRecord) -> Layer:
    return _pool(c, x, "max", blocks.max_pool)


def _pool(c: OpContext, x: TensorRecord, kind: str, block) -> Layer:
    _, _, out_s, out_zp = _io(c, x)
    same_quant(c, x, f"TFLite's integer {kind} pool does not rescale")
    nhwc(c, x)
    nhwc_out(c, x, x.shape[3], f"the input {x.shape}")
    stride, window = pool_window(c)
    pad = padding(c, x.shape[1:3], window, stride, (1, 1), c.out.shape[1:3])
    p = PoolParams(kind=kind, input_dims=x.shape, filter=window, output_dims=c.out.shape, stride=stride,
                   padding=pad, activation=activation(c, out_s, out_zp), **_s16(x))
    return c.layer(x, (), p, lambda a: block(a, p))


def add(c: OpContext, x: TensorRecord) -> Layer:
    return _add_or_sub(c, x, AddParams, blocks.add)


def sub(c: OpContext, x: TensorRecord) -> Layer:
    """SUB (sub_common.cc CalculateOpDataSub): ADD's scheme, in double as the pinned tflite-micro
    wheel computes it (its source today takes SUB's scale quotients in float32)."""
    return _add_or_sub(c, x, SubParams, blocks.sub)


def _add_or_sub(c: OpContext, x: TensorRecord, params, block) -> Layer:
    y = second_input(c, x)
    s1, z1, out_s, out_zp = _io(c, x)
    s2, z2 = activation_quant(c, y, "input 2")
    twice = 2 * max(s1, s2)
    left = ADD_LEFT_SHIFT_S16 if x.type == "INT16" else ADD_LEFT_SHIFT  # TFLite Micro's add.cc
    (m1, sh1), (m2, sh2) = tflite_multiplier(s1 / twice), tflite_multiplier(s2 / twice)
    mo, so = tflite_multiplier(twice / ((1 << left) * out_s))
    if so > 0:  # TFLite's QuantizeMultiplierSmallerThanOneExp would stop here
        raise c.refuse(f"output scale {out_s} is too small for the inputs' (the multiplier must be below 1)")
    if y.type != x.type:
        raise c.refuse(f"input 2 is {y.type}, input 1 {x.type}")
    p = params(shape=x.shape, input_1_offset=-z1, input_1_mult=m1, input_1_shift=sh1, input_2_offset=-z2,
               input_2_mult=m2, input_2_shift=sh2, left_shift=left, out_offset=out_zp, out_mult=mo,
               out_shift=so, activation=activation(c, out_s, out_zp), **_s16(x))
    return c.layer(x, (), p, lambda a, b: block(a, b, p), inputs=(x.index, y.index))


def mul(c: OpContext, x: TensorRecord) -> Layer:
    """MUL (mul_common.cc CalculateOpDataMul): the multiplier of double(input 1 scale) *
    double(input 2 scale) / double(output scale). One input may broadcast to the other (a
    squeeze-and-excite gate): the block's input 2."""
    x, y = broadcast_operands(c, x)
    s1, z1, out_s, out_zp = _io(c, x)
    s2, z2 = activation_quant(c, y, "input 2")
    m, sh = tflite_multiplier(float(np.float64(s1) * np.float64(s2) / np.float64(out_s)))
    p = MulParams(shape=x.shape, input_1_offset=-z1, input_2_offset=-z2, out_offset=out_zp, out_mult=m, out_shift=sh,
                  activation=activation(c, out_s, out_zp), shape_2=None if y.shape == x.shape else y.shape,
                  **_s16(x))
    if y.data is not None:  # a constant factor: a weight
        return c.layer(x, (c.constant(1, "m", y.type),), p, lambda a, b: blocks.mul(a, b, p))
    return c.layer(x, (), p, lambda a, b: blocks.mul(a, b, p), inputs=(x.index, y.index))


def softmax(c: OpContext, x: TensorRecord) -> Layer:
    """int8 in; out int8 (scale 1/256, zero point -128) or int16 (1/65536, -32768), as TFLite
    Micro checks them (the scale within 0.1%)."""
    if c.out.type == "INT16":
        in_s, _ = activation_quant(c, x, "input")
        out_s, out_zp = per_tensor(c, c.out, "output")
        want_s, want_zp, bits = 1 / 65536, -32768, 16
    else:
        in_s, _, out_s, out_zp = _io(c, x)
        want_s, want_zp, bits = SOFTMAX_OUT_SCALE, SOFTMAX_OUT_ZERO_POINT, 8
    if out_zp != want_zp or abs(out_s - want_s) > 0.001 * want_s:
        raise c.refuse(f"int{bits} output scale {out_s} / zero point {out_zp} (TFLite's is 1/{round(1 / want_s)}, "
                       f"{want_zp})")
    try:
        p = softmax_params(in_s, int(np.prod(x.shape[:-1])), x.shape[-1], c.options["beta"], bits)
    except (QuantizeError, ValueError) as e:
        raise c.refuse(str(e)) from None
    return c.layer(x, (), p, lambda a: blocks.softmax(a, p))


def softmax_s16(c: OpContext, x: TensorRecord) -> Layer:
    in_s, _, out_s, _ = _io(c, x)
    # TFLite Micro's check: zero points 0 (activation_quant), output scale 1/32768 within 0.1%
    if abs(out_s - SOFTMAX_S16_OUT_SCALE) > 0.001 * SOFTMAX_S16_OUT_SCALE:
        raise c.refuse(f"int16 output scale {out_s} (TFLite's is 1/32768)")
    try:
        p = softmax_s16_params(in_s, int(np.prod(x.shape[:-1])), x.shape[-1], c.options["beta"])
    except (QuantizeError, ValueError) as e:
        raise c.refuse(str(e)) from None
    return c.layer(x, (), p, lambda a: blocks.softmax_s16(a, p))


def mean(c: OpContext, x: TensorRecord) -> Layer:
    in_s, in_zp, out_s, out_zp = _io(c, x)
    axes, keep = mean_axes(c, x)
    m, sh = tflite_multiplier(in_s / out_s)
    p = MeanParams.of(x.shape, axes, keep, in_zp, m, sh, out_zp, 16 if x.type == "INT16" else 8)
    return c.layer(x, (), p, lambda a: blocks.mean(a, p))


def reshape_int8(c: OpContext, x: TensorRecord) -> Layer:
    same_quant(c, x, "a reshape copies the bytes")
    return reshape(c, x)


OPS = {"CONV_2D": conv, "DEPTHWISE_CONV_2D": depthwise, "FULLY_CONNECTED": dense, "AVERAGE_POOL_2D": avg_pool,
       "MAX_POOL_2D": max_pool, "ADD": add, "SUB": sub, "MUL": mul, "SOFTMAX": softmax, "RESHAPE": reshape_int8,
       "TRANSPOSE_CONV": transpose_conv, "MEAN": mean, **tflite_movement.OPS}
# 16x8 files: the ops with an int16 block
OPS_16X8 = {"CONV_2D": conv, "DEPTHWISE_CONV_2D": depthwise, "FULLY_CONNECTED": dense, "AVERAGE_POOL_2D": avg_pool,
            "MAX_POOL_2D": max_pool, "ADD": add, "SUB": sub, "MUL": mul, "SOFTMAX": softmax_s16,
            "RESHAPE": reshape_int8, "MEAN": mean, **tflite_movement.OPS}
