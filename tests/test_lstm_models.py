"""An int8 LSTM keyword model (.tflite: UNIDIRECTIONAL_SEQUENCE_LSTM -> RESHAPE -> FULLY_CONNECTED
-> SOFTMAX) in every variant on QEMU, bit-exact with TFLite Micro, the LSTM lowered onto
arm_lstm_unidirectional_s8 (the shim's on every shape of test_lstm_s8.py on the host)."""

from __future__ import annotations

import numpy as np
from test_lstm_s8 import keyword_lstm
from test_svdf_models import every_variant_exact

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
    every_variant_exact(c.model_ll, tmp_path)
