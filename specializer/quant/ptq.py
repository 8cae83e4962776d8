"""Post-training quantization (placeholder, filled below)."""
from __future__ import annotations

import math

from .fixedpoint import quantize_multiplier
from .params import SoftmaxParams

SOFTMAX_INTEGER_BITS = 5  # TFLite's kScaledDiffIntegerBits


def softmax_params(input_scale: float, num_rows: int, row_size: int, beta: float = 1.0) -> SoftmaxParams:
    """TFLite's PreprocessSoftmaxScaling and CalculateInputRadius for int8 input."""
    real = min(beta * input_scale * (1 << (31 - SOFTMAX_INTEGER_BITS)), (1 << 31) - 1.0)
    mult, shift = quantize_multiplier(real)
    if shift < 0:
        raise ValueError(f"softmax: input scale {input_scale} too small (multiplier {real} < 1)")
    radius = math.floor(((1 << SOFTMAX_INTEGER_BITS) - 1) * (1 << (31 - SOFTMAX_INTEGER_BITS)) / (1 << shift))
    return SoftmaxParams(num_rows=num_rows, row_size=row_size, mult=mult, shift=shift, diff_min=-radius)
