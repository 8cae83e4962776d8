"""int8 blocks lowered onto CMSIS-NN at capture: each block becomes ONE call of the CMSIS-NN s8
function in the captured IR, and the program QEMU runs is bit-exact with JAX's integer
reference (odd channel counts, padding on every side, stride 2)."""

from pathlib import Path

import numpy as np
import pytest

from specializer import cmsis_calls
from specializer.capture import capture
from specializer.libcalls import Operand
from specializer.measure import read_outputs, run_model
from specializer.thunks import Slice

MODEL = Path(__file__).parent / "data" / "int8_blocks" / "blocks_model.py"


@pytest.mark.parametrize("fn, cmsis_fn", [("conv", "arm_convolve_s8"), ("pointwise", "arm_convolve_s8"),
                                          ("depthwise", "arm_depthwise_conv_s8"),
                                          ("depthwise_mult2", "arm_depthwise_conv_s8"),
                                          ("dense", "arm_fully_connected_s8")])
def test_block_lowered_and_bit_exact_on_qemu(fn, cmsis_fn, tmp_path):
    c = capture(MODEL, fn, tmp_path)
    ir = c.model_ll.read_text()
    # exactly one call of the CMSIS-NN function, no XLA kernel left for the block
    assert ir.count(f'call i32 @{cmsis_fn}(') == 1
    assert "define ptr @" not in ir
    assert any(line.startswith("lowered cmsis_nn.") and line.endswith(cmsis_fn) for line in c.log)
    assert (tmp_path / "capture.log").read_text().count("lowered") == 1
    row, result = run_model(c.model_ll, tmp_path / "run")
    assert result.exit_code == 0 and row.status == "pass", result.stdout
    (got,) = read_outputs(result.stdout, c.manifest)
    expect = c.manifest.outputs[0].array()
    assert expect.dtype == np.int8 and len(np.unique(expect)) > 8  # not a saturated constant
    np.testing.assert_array_equal(got, expect)


def test_block_cmsis_nn_cannot_run_stays_xla_and_log_says_why(tmp_path):
    c = capture(MODEL, "dense_per_channel", tmp_path)
    ir = c.model_ll.read_text()
    assert "arm_fully_connected_s8" not in ir and "define ptr @" in ir
    assert any("kept XLA's code for cmsis_nn.fully_connected_s8." in line and "per-channel" in line
               for line in c.log)


def _op(alloc, dtype, dims, offset=0):
    size = int(np.prod(dims)) * (4 if dtype == "s32" else 1)
    return Operand(Slice(alloc, offset, size), dtype, tuple(dims), tuple(reversed(range(len(dims)))))


def test_mismatch_is_not_lowered():
    p = {"op": "fully_connected_s8", "batch": 1, "in_features": 4, "out_features": 3, "input_offset": 0,
         "output_offset": 0, "activation": [-128, 127], "multipliers": [1 << 30], "shifts": [0]}
    x, w, out = _op(0, "s8", (1, 4)), _op(1, "s8", (3, 4)), _op(2, "s8", (1, 3))
    assert cmsis_calls.lower("s", p, [x, w], out).function == "arm_fully_connected_s8"
    with pytest.raises(cmsis_calls.NotLowerable, match="filter"):
        cmsis_calls.lower("s", p, [x, _op(1, "s8", (4, 3))], out)
    with pytest.raises(cmsis_calls.NotLowerable, match="overlaps"):
        cmsis_calls.lower("s", p, [x, w], _op(0, "s8", (1, 3), offset=2))
    with pytest.raises(cmsis_calls.NotLowerable, match="bias"):
        cmsis_calls.lower("s", p, [x, w, _op(3, "s8", (3,))], out)
