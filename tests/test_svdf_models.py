"""int8 SVDF models in every variant on QEMU: a .tflite keyword tail (SVDF -> FULLY_CONNECTED ->
SOFTMAX) bit-exact with TFLite Micro (its int16-state form in every variant, its int8-state form in
one, which the streaming model runs in every variant), and a streaming model written as a user writes one with
the block, its state carried over twelve frames by lax.scan, so QEMU's call updates a state
that is not zero (bit-exact with JAX's block, which test_svdf_s8.py holds equal to TFLite
Micro's kernel from any state). Each with an int16 state (arm_svdf_state_s16_s8) and an int8
one (arm_svdf_s8)."""

from __future__ import annotations

import numpy as np
import pytest
from every_variant import every_variant_passes, model_namespace
from test_svdf_s8 import keyword_svdf

from specializer.capture import imported
from specializer.capture.capture import capture
from specializer.driver.run import run_model
from specializer.run.measure import read_outputs
from specializer.report import macs

STREAM_KWS = '''
"""A streaming keyword spotter's SVDF layer written with specializer.quant's blocks: 12 frames of
10 int8 features, one SVDF step per frame (its int{bits} state carried by lax.scan), every frame's
9 int8 outputs returned."""
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.quant import blocks
from specializer.quant.fixedpoint import quantize_multiplier
from specializer.quant.params import SvdfParams

FRAMES, FEATURES, FILTERS, RANK, MEMORY = 12, 10, 27, 3, 5
STATE, T_MAX = jnp.int{bits}, {t_max}
_m1, _s1 = quantize_multiplier(0.05 * 0.02 / {state_scale})
_m2, _s2 = quantize_multiplier({state_scale} * 1e-4 / {out_scale})
P = SvdfParams(batch=1, input_size=FEATURES, filters=FILTERS, memory=MEMORY, rank=RANK, input_zero_point=-4,
               output_zero_point=6, feature_multiplier=_m1, feature_shift=_s1, output_multiplier=_m2,
               output_shift=_s2, state_bits={bits})


def stream_kws(frames, wf, wt, b):
    def step(state, x):
        y, state = blocks.svdf(x[None], wf, wt, b, state, P)
        return state, y[0]

    _, ys = lax.scan(step, jnp.zeros(P.state_shape, STATE), frames)
    return ys


_rng = np.random.default_rng(21)
stream_kws.example_inputs = {"frames": _rng.integers(-128, 128, (FRAMES, FEATURES)).astype(np.int8)}
stream_kws.weights = {"wf": _rng.integers(-127, 128, (FILTERS, FEATURES)).astype(np.int8),
                      "wt": _rng.integers(-T_MAX, T_MAX, (FILTERS, MEMORY)).astype(STATE),
                      "b": _rng.integers(-{b_max}, {b_max}, FILTERS // RANK).astype(np.int32)}
'''


# state bits -> the stream model's (time weights' bound, state scale, output scale, bias bound):
# the state's new values spread over its type (int8: about a quarter of them clamped), the
# outputs over int8
STREAM = {16: (20000, 0.0072, 0.8, 100000), 8: (127, 0.15, 0.0098, 10000)}
FUNCTION = {16: "arm_svdf_state_s16_s8", 8: "arm_svdf_s8"}


def stream_source(bits: int) -> str:
    t_max, state_scale, out_scale, b_max = STREAM[bits]
    source = STREAM_KWS
    for k, v in {"bits": bits, "t_max": t_max, "state_scale": state_scale, "out_scale": out_scale,
                 "b_max": b_max}.items():
        source = source.replace("{" + k + "}", str(v))
    return source


@pytest.mark.parametrize("bits", [16, 8])
def test_imported_keyword_tail_bit_exact_with_tflite_micro(bits, tmp_path):
    path = tmp_path / "kws_svdf.tflite"
    path.write_bytes(keyword_svdf(bits=bits))
    c = capture(path, None, tmp_path / "cap")
    assert [line.split(" onto ")[1] for line in c.log if line.startswith("lowered ")] == \
        [FUNCTION[bits], "arm_fully_connected_s8", "arm_softmax_s8"]
    x = c.manifest.inputs[0].array()
    (want,) = imported.run_tflite_micro(imported.read(path), [(x,)])[0]
    got = c.manifest.outputs[0].array()
    np.testing.assert_array_equal(got, want)  # the reference QEMU is held to is TFLite Micro's
    assert len(np.unique(got)) >= 6  # the softmax spreads
    # SVDF: 32 filters x (40 features + 8 memory); the dense layer 16 x 12
    assert macs.count(c.model_ll.read_text()) == 32 * (40 + 8) + 16 * 12
    if bits == 16:
        every_variant_passes(c.model_ll, tmp_path, exact=True)
    else:  # the file's layout on QEMU once (the int8-state call runs five ways in the streaming model)
        row, result = run_model(c.model_ll, tmp_path / "run")
        assert result.exit_code == 0 and row.status == "pass", result.stdout
        np.testing.assert_array_equal(read_outputs(result.stdout, c.manifest)[0], want)


@pytest.mark.parametrize("bits", [16, 8])
def test_streaming_model_written_with_the_block_in_every_variant(bits, tmp_path):
    src = tmp_path / "stream_kws.py"
    src.write_text(stream_source(bits))
    c = capture(src, "stream_kws", tmp_path / "cap")
    assert any(f"onto {FUNCTION[bits]}" in line for line in c.log)
    assert FUNCTION[bits] in c.model_ll.read_text()
    assert macs.count(c.model_ll.read_text()) == 27 * (10 + 5)  # one step's, in the loop's body once
    got = c.manifest.outputs[0].array()
    assert got.shape == (12, 9) and len(np.unique(got[(got > -128) & (got < 127)])) > 40
    if bits == 8:  # the new values reach the clamp the lowering passes (int8's, not the glue's int16)
        newest = _newest_values(src.read_text())
        assert (newest == 127).sum() > 20 and (newest == -128).sum() > 20, newest
    every_variant_passes(c.model_ll, tmp_path, exact=True)


def _newest_values(source: str) -> np.ndarray:
    """Each frame's new state values (every filter's last place), from the model file's block."""
    import jax.numpy as jnp

    from specializer.quant import blocks

    ns = model_namespace(source, "stream_kws.py")
    p, w = ns["P"], ns["stream_kws"].weights
    state, out = jnp.zeros(p.state_shape, ns["STATE"]), []
    for x in ns["stream_kws"].example_inputs["frames"]:
        _, state = blocks.svdf(x[None], w["wf"], w["wt"], w["b"], state, p)
        out.append(np.asarray(state).reshape(p.filters, p.memory)[:, -1])
    return np.stack(out)
