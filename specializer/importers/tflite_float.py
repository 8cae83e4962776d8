"""TFLite's float32 ops as plain JAX (lax convolutions, matmul, reduce_window), TFLite's
conventions: NHWC, OHWI filters ([1, KH, KW, C * multiplier] for depthwise), the average over
the window's pixels inside the input, softmax with the file's beta; the activations LOGISTIC,
TANH, HARD_SWISH and LEAKY_RELU as TFLite's float reference writes them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.importers import tflite_movement
from specializer.importers.tflite_file import ACTIVATION_NAMES, TensorRecord
from specializer.importers.tflite_layer import (Layer, OpContext, broadcast_operands, check_dense_options,
                                                filter_and_bias, mean_axes, nhwc, nhwc_out, padding, pool_window,
                                                reshape, second_input, stride_dilation, transpose_conv_inputs)
from specializer.quant.blocks import stuffed_padding

_ACTIVATIONS = {"NONE": lambda v: v, "RELU": lambda v: jnp.maximum(v, 0.0),
                "RELU6": lambda v: jnp.clip(v, 0.0, 6.0), "RELU_N1_TO_1": lambda v: jnp.clip(v, -1.0, 1.0)}


def activation(c: OpContext):
    code = c.options["fusedActivationFunction"]
    name = ACTIVATION_NAMES.get(code, str(code))
    if name not in _ACTIVATIONS:
        raise c.refuse(f"fused activation {name} is not supported")
    return _ACTIVATIONS[name]


def _filter(c: OpContext, out_axis: int) -> tuple[TensorRecord, tuple[str, ...]]:
    if c.out.type != "FLOAT32":
        raise c.refuse(f"output type {c.out.type} with a FLOAT32 input")
    w = c.tensor(1)
    if w is not None and w.type == "INT8":
        raise c.refuse(f"int8 weights (tensor {w.index}) with a float32 input (hybrid quantization) "
                       "are not supported")
    return filter_and_bias(c, "FLOAT32", "FLOAT32", out_axis)


def conv(c: OpContext, x: TensorRecord, depthwise: bool = False) -> Layer:
    w, names = _filter(c, 3 if depthwise else 0)
    nhwc(c, x)
    if depthwise:
        mult = c.options["depthMultiplier"]
        if w.shape[0] != 1 or w.shape[3] != x.shape[3] * mult:
            raise c.refuse(f"filter {w.shape} does not match input {x.shape} with depth multiplier {mult}")
    elif w.shape[3] != x.shape[3]:
        raise c.refuse(f"grouped convolution (input {x.shape}, filter {w.shape}) is not supported")
    nhwc_out(c, x, w.shape[3 if depthwise else 0], f"the filter {w.shape}")
    stride, dilation = stride_dilation(c)
    pad = padding(c, x.shape[1:3], w.shape[1:3], stride, dilation, c.out.shape[1:3])
    act = activation(c)
    groups = x.shape[3] if depthwise else 1
    dims = ("NHWC", "IHWO" if depthwise else "OHWI", "NHWC")

    def run(a, wt, b=None):
        y = lax.conv_general_dilated(a, wt, stride, pad, rhs_dilation=dilation, dimension_numbers=dims,
                                     feature_group_count=groups, precision=lax.Precision.HIGHEST)
        return act(y if b is None else y + b)
    return c.layer(x, names, None, run)


def transpose_conv(c: OpContext, x: TensorRecord) -> Layer:
    """TRANSPOSE_CONV as XLA sees a transposed convolution: the input dilated by the stride, the
    filter reversed, padded k - 1 - pad before and whatever makes the output's size after."""
    if c.out.type != "FLOAT32":
        raise c.refuse(f"output type {c.out.type} with a FLOAT32 input")
    w, names, stride, before = transpose_conv_inputs(c, x, "FLOAT32", "FLOAT32")
    pads = [stuffed_padding(size, out, k, s, pad)
            for size, out, k, s, pad in zip(x.shape[1:3], c.out.shape[1:3], w.shape[1:3], stride, before)]
    act = activation(c)

    def run(a, wt, b=None):
        y = lax.conv_general_dilated(a, wt[:, ::-1, ::-1, :], (1, 1), pads, lhs_dilation=stride,
                                     dimension_numbers=("NHWC", "OHWI", "NHWC"), precision=lax.Precision.HIGHEST)
        return act(y if b is None else y + b)
    return c.layer(x, names, None, run)


def dense(c: OpContext, x: TensorRecord) -> Layer:
    check_dense_options(c)
    w, names = _filter(c, 0)
    n_out, n_in = w.shape
    if int(np.prod(x.shape)) % n_in:
        raise c.refuse(f"input {x.shape} does not fit a filter {w.shape}")
    act, out_shape = activation(c), c.out.shape

    def run(a, wt, b=None):
        y = jnp.matmul(a.reshape(-1, n_in), wt.T, precision=lax.Precision.HIGHEST)
        return act(y if b is None else y + b).reshape(out_shape)
    return c.layer(x, names, None, run)


def avg_pool(c: OpContext, x: TensorRecord) -> Layer:
    nhwc(c, x)
    nhwc_out(c, x, x.shape[3], f"the input {x.shape}")
    stride, window = pool_window(c)
    pad = padding(c, x.shape[1:3], window, stride, (1, 1), c.out.shape[1:3])
    act = activation(c)
    dims, strides, pads = (1, *window, 1), (1, *stride, 1), ((0, 0), *pad, (0, 0))

    def run(a):
        total = lax.reduce_window(a, 0.0, lax.add, dims, strides, pads)
        count = lax.reduce_window(jnp.ones_like(a), 0.0, lax.add, dims, strides, pads)  # padding not counted
        return act(total / count)
    return c.layer(x, (), None, run)


def add(c: OpContext, x: TensorRecord) -> Layer:
    y = second_input(c, x)
    act = activation(c)
    return c.layer(x, (), None, lambda a, b: act(a + b), inputs=(x.index, y.index))


def sub(c: OpContext, x: TensorRecord) -> Layer:
    y = second_input(c, x)
    act = activation(c)
    return c.layer(x, (), None, lambda a, b: act(a - b), inputs=(x.index, y.index))


def mul(c: OpContext, x: TensorRecord) -> Layer:
    x, y = broadcast_operands(c, x)
    act = activation(c)
    if y.data is not None:  # a constant factor: a weight
        return c.layer(x, (c.constant(1, "m", "FLOAT32"),), None, lambda a, b: act(a * b))
    return c.layer(x, (), None, lambda a, b: act(a * b), inputs=(x.index, y.index))


def softmax(c: OpContext, x: TensorRecord) -> Layer:
    beta = c.options["beta"]

    def run(a):
        e = jnp.exp((a - jnp.max(a, axis=-1, keepdims=True)) * beta)
        return e / jnp.sum(e, axis=-1, keepdims=True)
    return c.layer(x, (), None, run)


def mean(c: OpContext, x: TensorRecord) -> Layer:
    """MEAN: the sum over the axes divided by their element count (TFLite's float reference)."""
    axes, keep = mean_axes(c, x)
    return c.layer(x, (), None, lambda a: jnp.mean(a, axis=axes, keepdims=keep))


def elementwise(fn):
    """An op of one input whose output has its shape (the activations)."""
    def build(c: OpContext, x: TensorRecord) -> Layer:
        if len(c.op.inputs) != 1 or tuple(c.out.shape) != tuple(x.shape) or c.out.type != x.type:
            raise c.refuse(f"takes one {x.type} input and writes its shape {list(x.shape)}")
        return c.layer(x, (), None, lambda a: fn(c, a))
    return build


def _leaky_relu(c: OpContext, a):
    alpha = c.options["alpha"]
    return jnp.where(a >= 0, a, jnp.float32(alpha) * a)


ACTIVATIONS = {"LOGISTIC": elementwise(lambda c, a: jax.nn.sigmoid(a)), "TANH": elementwise(lambda c, a: jnp.tanh(a)),
               # TFLite's reference: x * min(6, max(0, x + 3)) / 6
               "HARD_SWISH": elementwise(lambda c, a: a * jnp.clip(a + 3.0, 0.0, 6.0) / 6.0),
               "LEAKY_RELU": elementwise(_leaky_relu)}


OPS = {"CONV_2D": conv, "DEPTHWISE_CONV_2D": lambda c, x: conv(c, x, depthwise=True), "FULLY_CONNECTED": dense,
       "AVERAGE_POOL_2D": avg_pool, "ADD": add, "SUB": sub, "MUL": mul, "SOFTMAX": softmax, "RESHAPE": reshape,
       "TRANSPOSE_CONV": transpose_conv, "MEAN": mean, **tflite_movement.OPS, **ACTIVATIONS}
