"""An int8 LSTM keyword model (.tflite: UNIDIRECTIONAL_SEQUENCE_LSTM -> RESHAPE -> FULLY_CONNECTED
-> SOFTMAX) in every variant on QEMU, bit-exact with TFLite Micro, the LSTM lowered onto
arm_lstm_unidirectional_s8 (the shim's on every shape of test_lstm_s8.py on the host)."""

from __future__ import annotations

import numpy as np
import pytest
from every_variant import every_variant_passes
from test_lstm_s8 import keyword_lstm, lstm_model

from specializer.capture import imported
from specializer.capture.capture import capture
from specializer.report import macs


def test_keyword_lstm_bit_exact_with_tflite_micro_in_every_variant(tmp_path):
    path = tmp_path / "kws_lstm.tflite"
    path.write_bytes(keyword_lstm())
    c = capture(path, None, tmp_path / "cap")
    assert [line.split(" onto ")[1] for line in c.log if line.startswith("lowered ")] == \
        ["arm_lstm_unidirectional_s8", "arm_fully_connected_s8", "arm_softmax_s8"]
    x = c.manifest.inputs[0].array()
    (want,) = imported.run_tflite_micro(imported.read(path), [(x,)])[0]
    got = c.manifest.outputs[0].array()
    np.testing.assert_array_equal(got, want)  # the reference QEMU is held to is TFLite Micro's
    assert len(np.unique(got)) >= 5  # the softmax spreads
    # 6 steps of 4 gates x 12 cells x (10 inputs + 12 hidden); the dense layer 72 -> 8
    assert macs.count(c.model_ll.read_text()) == 6 * 4 * 12 * (10 + 12) + 72 * 8
    every_variant_passes(c.model_ll, tmp_path, exact=True)


@pytest.mark.slow  # about 35 s each on QEMU; the keyword model runs in every variant in the default suite
@pytest.mark.parametrize("name", ["time_major_batch2", "batch2", "cell_clip"])
def test_lstm_forms_in_every_variant(name, tmp_path):
    """The forms the shim's host test covers, through capture's lowering: batch strides of both
    layouts, the three scratch buffers per batch, a clip the cell reaches. Capture holds the
    reference to TFLite Micro's outputs, so "pass" with no error is TFLite Micro's values."""
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(lstm_model(name))
    c = capture(path, None, tmp_path / "cap")
    assert any("onto arm_lstm_unidirectional_s8" in line for line in c.log)
    every_variant_passes(c.model_ll, tmp_path, exact=True)
