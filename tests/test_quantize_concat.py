"""quantize() on jnp.concatenate: TFLite's CONCATENATION (inputs and output share one quantization;
an input quantized otherwise requantized first, as the converter's int8 -> int8 QUANTIZE does).
A U-Net block as a user writes one (down, up by a transposed conv, the skip joined on channels)
and two branches joined on rows; close to the float model, the requantization equal to TFLite's
reference arithmetic, the refusal one line, and every variant on QEMU equal to its JAX values."""

import numpy as np
import pytest
from every_variant import captured_source, every_variant_passes, model_namespace

from specializer.quant import blocks
from specializer.quant.graph import QuantizeError
from specializer.quant.ptq import quantize

MODEL = '''
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.quant.ptq import quantize

DN = ("NHWC", "HWIO", "NHWC")


def unet_block(x, w_in, w_down, w_up, w_out, w_row):
    skip = jax.nn.relu(lax.conv_general_dilated(x, w_in, (1, 1), "SAME", dimension_numbers=DN))        # 1x8x6x5
    down = lax.reduce_window(skip, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")             # 1x4x3x5
    down = jax.nn.relu(lax.conv_general_dilated(down, w_down, (1, 1), "SAME", dimension_numbers=DN))   # 1x4x3x7
    up = lax.conv_transpose(down, w_up, (2, 2), "SAME", dimension_numbers=DN)                          # 1x8x6x3
    joined = jnp.concatenate([skip, up], axis=-1)                                                      # 1x8x6x8
    y = lax.conv_general_dilated(joined, w_out, (1, 1), "SAME", dimension_numbers=DN)                  # 1x8x6x2
    rows = jnp.concatenate([y, lax.conv_general_dilated(x, w_row, (2, 1), "SAME", dimension_numbers=DN)],
                           axis=1)                                                                     # 1x12x6x2
    return rows


rng = np.random.default_rng(11)
W = {"w_in": rng.normal(size=(3, 3, 3, 5)) * 0.4, "w_down": rng.normal(size=(3, 3, 5, 7)) * 0.3,
     "w_up": rng.normal(size=(2, 2, 7, 3)) * 0.3, "w_out": rng.normal(size=(1, 1, 8, 2)) * 0.4,
     "w_row": rng.normal(size=(3, 3, 3, 2)) * 2.0}
W = {k: v.astype(np.float32) for k, v in W.items()}
calibration = [{"x": rng.standard_normal((1, 8, 6, 3)).astype(np.float32)} for _ in range(12)]
unet_int8, params = quantize(unet_block, W, calibration, name="unet_int8")
unet_int8.example_inputs = {"x": unet_int8.inputs["x"].quantize(calibration[0]["x"])}
unet_int8.weights = params
'''


def quantized() -> dict:
    return model_namespace(MODEL, "unet_int8.py")


def test_the_steps_and_close_to_float():
    ns = quantized()
    model, qp = ns["unet_int8"], ns["params"]
    kinds = [s.kind for s in model.steps]
    assert kinds == ["conv", "maxpool", "conv", "tconv", "concat", "conv", "conv", "concat"]
    axis, requants = model.steps[4].block
    assert axis == 3 and len(requants) == 2
    # the output's range holds both inputs': a relu'd skip and an unclamped up-conv differ, so
    # at least one of them is requantized; the second join's rows (x 2.0 weights) likewise
    assert any(r is not None for r in requants)
    assert any(r is not None for r in model.steps[7].block[1])
    out_q = model.step_qparams[4]
    for r in requants:
        if r is not None:
            assert r[3] == out_q.zero_point
    rng = np.random.default_rng(12)
    for _ in range(4):
        x = rng.standard_normal((1, 8, 6, 3)).astype(np.float32)
        got, ref = model.run_float(qp, x=x), np.asarray(ns["unet_block"](x, **ns["W"]))
        assert got.shape == ref.shape == (1, 12, 6, 2)
        assert np.abs(got - ref).max() <= 0.05 * np.abs(ref).max()


def _tflite_requantize(x: int, in_zp: int, mult: int, shift: int, out_zp: int) -> int:
    """reference_ops::Requantize read literally: MultiplyByQuantizedMultiplier (gemmlowp's
    SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT), in Python integers."""
    a = (x - in_zp) * (1 << max(shift, 0))
    ab = a * mult
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    q = ab + nudge
    high = -((-q) >> 31) if q < 0 else q >> 31  # C's division truncates toward zero
    e = max(-shift, 0)
    mask = (1 << e) - 1
    rem, threshold = high & mask, (mask >> 1) + (1 if high < 0 else 0)
    v = (high >> e) + (1 if rem > threshold else 0)
    return max(-128, min(127, v + out_zp))


@pytest.mark.parametrize("in_zp, real, out_zp", [(-128, 0.37, -3), (19, 1.9, 40), (0, 0.0123, -128),
                                                 (-5, 0.5, 0), (7, 3.75, 127)])
def test_requantize_is_tflites(in_zp, real, out_zp):
    from specializer.quant.fixedpoint import quantize_multiplier

    mult, shift = quantize_multiplier(real)
    x = np.arange(-128, 128, dtype=np.int8)
    got = np.asarray(blocks.requantize_s8(x, in_zp, mult, shift, out_zp))
    want = [_tflite_requantize(int(v), in_zp, mult, shift, out_zp) for v in x]
    assert got.tolist() == want


def test_a_constant_operand_is_refused_in_one_line():
    import jax.numpy as jnp

    x = [{"x": np.ones((1, 4, 4, 2), np.float32)}]
    with pytest.raises(QuantizeError) as e:
        quantize(lambda x, c: jnp.concatenate([x, c], axis=-1), {"c": np.ones((1, 4, 4, 1), np.float32)}, x)
    assert "\n" not in str(e.value)
    assert "unsupported op 'concatenate'" in str(e.value) and "must be an activation" in str(e.value)


def test_in_every_variant_equal_to_jax(tmp_path):
    every_variant_passes(captured_source(MODEL, "unet_int8", tmp_path).model_ll, tmp_path, exact=True)
