"""TFLite's int8 LOGISTIC, TANH, HARD_SWISH and LEAKY_RELU as specializer.quant.activations'
blocks, their parameters derived from the file as TFLite Micro's Prepare derives them.

Each takes one int8 input and writes an int8 output of the same shape, both quantized per
tensor. LOGISTIC's output must be TFLite's 1/256, -128 and TANH's 1/128, 0 (TFLite Micro's kernels
write those whatever the file says; it refuses LOGISTIC's other zero points); HARD_SWISH's output
scale must exceed the input's / 128 (TFLite Micro's Prepare refuses it otherwise).

In 16x8 files LOGISTIC and TANH take INT16 data (zero points 0) into an output of scale 2^-15:
specializer.quant.activations_s16's blocks; LEAKY_RELU the int16 form of its block.
"""

from __future__ import annotations

import math

from specializer.importers.tflite_file import TensorRecord
from specializer.importers.tflite_int8 import _io
from specializer.importers.tflite_layer import Layer, OpContext
from specializer.quant import activations, activations_s16

def _elementwise(c: OpContext, x: TensorRecord) -> tuple[float, int, float, int]:
    """(input scale, zero point, output scale, zero point) of a one-input op whose output has its
    input's shape."""
    if len(c.op.inputs) != 1:
        raise c.refuse(f"{len(c.op.inputs)} inputs (it takes one)")
    q = _io(c, x)
    if tuple(c.out.shape) != tuple(x.shape):
        raise c.refuse(f"output shape {c.out.shape} differs from the input's {x.shape}")
    return q


def _params(c: OpContext, derive, *args):
    try:
        return derive(*args)
    except ValueError as e:
        raise c.refuse(str(e)) from None


def logistic(c: OpContext, x: TensorRecord) -> Layer:
    p = _params(c, activations.logistic_params, x.shape, *_elementwise(c, x))
    return c.layer(x, (), p, lambda a: activations.logistic(a, p))


def tanh(c: OpContext, x: TensorRecord) -> Layer:
    p = _params(c, activations.tanh_params, x.shape, *_elementwise(c, x))
    return c.layer(x, (), p, lambda a: activations.tanh(a, p))


def hard_swish(c: OpContext, x: TensorRecord) -> Layer:
    p = _params(c, activations.hard_swish_params, x.shape, *_elementwise(c, x))
    return c.layer(x, (), p, lambda a: activations.hard_swish(a, p))


def leaky_relu(c: OpContext, x: TensorRecord) -> Layer:
    q = _elementwise(c, x)
    alpha = c.options["alpha"]
    if not math.isfinite(alpha):
        raise c.refuse(f"alpha {alpha} is not a finite number")
    p = _params(c, activations.leaky_relu_params, x.shape, *q, alpha, 16 if x.type == "INT16" else 8)
    return c.layer(x, (), p, lambda a: activations.leaky_relu(a, p))


def logistic16(c: OpContext, x: TensorRecord) -> Layer:
    p = _params(c, activations_s16.logistic_params, x.shape, *_elementwise(c, x))
    return c.layer(x, (), p, lambda a: activations_s16.logistic(a, p))


def tanh16(c: OpContext, x: TensorRecord) -> Layer:
    p = _params(c, activations_s16.tanh_params, x.shape, *_elementwise(c, x))
    return c.layer(x, (), p, lambda a: activations_s16.tanh(a, p))


OPS = {"LOGISTIC": logistic, "TANH": tanh, "HARD_SWISH": hard_swish, "LEAKY_RELU": leaky_relu}
OPS_16X8 = {"LOGISTIC": logistic16, "TANH": tanh16, "LEAKY_RELU": leaky_relu}
