"""The two tables of TFLite's int16 softmax, as TFLite Micro's Prepare fills them.

LUTPopulate<int16_t> (TFLite's kernels/internal/common.h) samples a function at 513 points of
an int16 input range and stores int16 outputs that arm_softmax_s16 and TFLite's SoftmaxInt16
interpolate over the index's low 7 bits; each entry is biased by half the error the
interpolation makes at the segment's midpoint. Every step is float32 arithmetic (the input range,
the step, the output scaling, each sample) and each rounding is TfLiteRound (halves away from
zero), so this module does the same in float32, one operation at a time:

- exp(x) for x in [-10, 0]: input scale 10 / 65535 around zero point 32767, output scale 2 / 65535;
- 1 / (1 + x) for x in [0, 1]: input scale 1 / 65535 around -32768, the same output scale.

The tables are the same for every layer (the layer's own scale goes into its multiplier), so
one copy serves every softmax of a model. exp comes from NumPy's float32 exp; over these 1,537
arguments it gives the same table as the C library's expf (checked against TFLite Micro's
outputs in tests/test_softmax_s16.py).
"""

from __future__ import annotations

import functools

import numpy as np

from specializer.quant.fixedpoint import tflite_round

SIZE = 513
_F = np.float32


def _round(x: np.float32) -> np.float32:
    """TfLiteRound on a float32, as a float32."""
    return _F(tflite_round(float(x)))


def populate(input_scale: float, input_zero_point: int, output_scale: float, output_zero_point: int,
             transform) -> tuple[int, ...]:
    """LUTPopulateInt16<float>: `transform` maps a float32 to a float32."""
    input_scale, output_scale = _F(input_scale), _F(output_scale)
    in_min = _F(input_scale * _F(-32768 - input_zero_point))
    in_max = _F(input_scale * _F(32767 - input_zero_point))
    out_min = _F(output_scale * _F(-32768 - output_zero_point))
    out_max = _F(output_scale * _F(32767 - output_zero_point))
    step = _F((in_max - in_min) / _F(512))
    half = _F(step / _F(2))
    inv = _F(_F(65536) / _F(out_max - out_min))
    lo, hi = _F(-32768), _F(32767)
    lut = []
    for i in range(512):
        x = _F(in_min + _F(_F(i) * step))
        val, mid = transform(x), transform(_F(x + half))
        nxt = transform(_F(in_min + _F(_F(i + 1) * step)))
        sample = _round(_F(val * inv))
        interp = _round(_F(_F(_F(nxt * inv) + sample) / _F(2)))
        err = _F(interp - _round(_F(mid * inv)))
        bias = _round(_F(err / _F(2)))
        lut.append(int(min(max(_F(sample - bias), lo), hi)))
    lut.append(int(min(max(_round(_F(transform(in_max) * inv)), lo), hi)))
    return tuple(lut)


_RANGE = _F(65535)  # int16 max - min, as a float


@functools.cache
def exp_table() -> tuple[int, ...]:
    """exp(x) on [-10, 0] (TFLite's softmax exp_lut)."""
    return populate(_F(_F(10) / _RANGE), 32767, _F(_F(2) / _RANGE), 0, lambda v: _F(np.exp(_F(v))))


@functools.cache
def one_over_one_plus_x_table() -> tuple[int, ...]:
    """1 / (1 + x) on [0, 1] (TFLite's softmax one_over_one_plus_x_lut)."""
    return populate(_F(_F(1) / _RANGE), -32768, _F(_F(2) / _RANGE), 0, lambda v: _F(_F(1) / _F(_F(1) + v)))

