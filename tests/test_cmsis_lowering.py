"""int8 blocks lowered onto CMSIS-NN at capture: each block becomes ONE call of the CMSIS-NN s8
function in the captured IR, and the program QEMU runs is bit-exact with JAX's integer
reference (odd channel counts, padding on every side, stride 2)."""

from pathlib import Path

import numpy as np
import pytest

from specializer.capture import cmsis_calls, cmsis_calls_act

from specializer import inputs

from specializer.optimize import variants
from specializer.capture.capture import capture
from specializer.driver.compare import compare
from specializer.capture.libcalls import Operand
from specializer.driver.run import run_model
from specializer.run.measure import read_outputs
from specializer.capture.thunks import Slice

MODEL = Path(__file__).parent / "data" / "int8_blocks" / "blocks_model.py"


CONV, DW = "arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8"


@pytest.mark.parametrize("fn, cmsis_fn, form", [
    ("conv", "arm_convolve_s8", f"the form {CONV} picks"), ("pointwise", "arm_convolve_s8", f"the form {CONV} picks"),
    ("pointwise_fast", "arm_convolve_1x1_s8_fast", f"the form {CONV} picks"),
    ("pointwise_strided", "arm_convolve_1x1_s8", f"the form {CONV} picks"),
    ("pointwise_padded", "arm_convolve_s8", "not the wrapper's form: arm_convolve_1x1_s8_fast assumes no bottom/right"),
    ("conv_1xn", "arm_convolve_1_x_n_s8", f"the form {CONV} picks"),
    ("depthwise", "arm_depthwise_conv_s8_opt", f"the form {DW} picks"),
    ("depthwise_3x3", "arm_depthwise_conv_3x3_s8", f"the form {DW} picks"),
    ("depthwise_3x3_s2", "arm_depthwise_conv_3x3_s8", f"the form {DW} picks"),
    ("depthwise_3x3_right2", "arm_depthwise_conv_s8", "not the wrapper's form: arm_depthwise_conv_3x3_s8 reads"),
    ("depthwise_mult2", "arm_depthwise_conv_s8", f"the form {DW} picks"),
    ("dense", "arm_fully_connected_s8", "")])  # fmt: skip
def test_block_lowered_and_bit_exact_on_qemu(fn, cmsis_fn, form, tmp_path):
    """Each block is one CMSIS-NN call (the form the wrapper TFLite Micro calls would pick for its
    shapes), bit-exact on QEMU; with SPECIALIZER_CMSIS_NN set, on that checkout's forms."""
    c = capture(MODEL, fn, tmp_path)
    ir = c.model_ll.read_text()
    # exactly one call of the CMSIS-NN function, no XLA kernel left for the block
    assert ir.count(f'call i32 @{cmsis_fn}(') == 1
    assert "define ptr @" not in ir
    tail = f"onto {cmsis_fn} ({form}" if form else f"onto {cmsis_fn}"
    assert any(line.startswith("lowered cmsis_nn.") and tail in line for line in c.log), c.log
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


def _consts(fn: str, scope: str, p) -> list[str]:
    """The constant globals (or call operands) the block's CMSIS-NN call must get."""
    if p.op in ("avgpool_s8", "max_pool_s8"):
        (top, _), (left, _) = p.padding
        fields = [p.stride[1], p.stride[0], left, top, *p.activation]
        size = cmsis_calls_act.avgpool_s8_buffer_size(p.input_dims[3]) if p.op == "avgpool_s8" else 0
        ctx = f"{{ ptr @{fn}_scratch, i32 {size} }}" if size else "zeroinitializer"
        return [f"@{scope}.params = private unnamed_addr constant [6 x i32] [" +
                ", ".join(f"i32 {v}" for v in fields) + "]",
                f"@{scope}.filter_dims = private unnamed_addr constant [4 x i32] [i32 1, i32 {p.filter[0]}, "
                f"i32 {p.filter[1]}, i32 1]",
                f"@{scope}.output_dims = private unnamed_addr constant [4 x i32] [" +
                ", ".join(f"i32 {v}" for v in p.output_dims) + "]",
                f"@{scope}.ctx = private unnamed_addr constant {{ ptr, i32 }} {ctx}"]
    if p.op == "elementwise_add_s8":
        return [f"i32 {p.input_1_offset}, i32 {p.input_1_mult}, i32 {p.input_1_shift}, i32 {p.input_2_offset}, "
                f"i32 {p.input_2_mult}, i32 {p.input_2_shift}, i32 {p.left_shift}, ptr",
                f"i32 {p.out_offset}, i32 {p.out_mult}, i32 {p.out_shift}, i32 {p.activation[0]}, "
                f"i32 {p.activation[1]}, i32 {int(np.prod(p.shape))})"]
    return [f"i32 {p.num_rows}, i32 {p.row_size}, i32 {p.mult}, i32 {p.shift}, i32 {p.diff_min}, ptr"]


ACTIVATION_BLOCKS = [("avgpool", "_AVG", "arm_avgpool_s8", "i32"), ("avgpool_global", "_GAP", "arm_avgpool_s8", "i32"),
                     ("maxpool", "_MAX", "arm_max_pool_s8", "i32"), ("add", "_ADD", "arm_elementwise_add_s8", "i32"),
                     ("softmax", "_SOFTMAX", "arm_softmax_s8", "void")]


def test_activation_blocks_lowered_and_bit_exact_in_every_variant(tmp_path):
    """The five activation blocks side by side in one model (each on its own input): each is one call
    of its CMSIS-NN function with its constants, no XLA kernel is left, and every variant's outputs
    equal JAX's value for value."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("blocks_model_for_params", MODEL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    c = capture(MODEL, "activations", tmp_path / "cap")
    ir = c.model_ll.read_text()
    assert "define ptr @" not in ir  # no XLA kernel left: each block is its call alone
    for fn, block, cmsis_fn, ret in ACTIVATION_BLOCKS:
        p = getattr(mod, block)
        assert ir.count(f"call {ret} @{cmsis_fn}(") == (2 if cmsis_fn == "arm_avgpool_s8" else 1), cmsis_fn
        assert sum(line.startswith(f"lowered {p.scope} (") and line.endswith(f" onto {cmsis_fn}")
                   for line in c.log) == 1, (fn, c.log)
        for text in _consts("activations", p.scope, p):
            assert text in ir, (fn, text)
    assert len([line for line in c.log if line.startswith("lowered ")]) == len(ACTIVATION_BLOCKS)
    for out in c.manifest.outputs:
        expect = out.array()
        assert expect.dtype == np.int8 and len(np.unique(expect)) > 8  # not a saturated constant
    comp = compare(inputs.load(c.model_ll), tmp_path / "cmp", variants.Options.of(unroll_candidates=()))
    assert [r.variant for r in comp.rows] == list(variants.VARIANTS)
    for r in comp.rows:  # integer outputs: pass means equal to JAX's, value for value
        assert r.status == "pass", (r.variant, r)
        assert r.max_abs_err == 0, r.variant


def test_activation_block_mismatch_is_not_lowered():
    p = {"op": "softmax_s8", "num_rows": 2, "row_size": 5, "mult": 1 << 30, "shift": 20, "diff_min": -100}
    x, out = _op(0, "s8", (2, 5)), _op(1, "s8", (2, 5))
    call = cmsis_calls_act.lower("s", p, [x], out)
    assert call.function == "arm_softmax_s8" and call.ret == "void" and call.args[1:6] == (2, 5, 1 << 30, 20, -100)
    with pytest.raises(cmsis_calls.NotLowerable, match="rows"):
        cmsis_calls_act.lower("s", p, [_op(0, "s8", (5, 2))], out)
    with pytest.raises(cmsis_calls.NotLowerable, match="overlaps"):
        cmsis_calls_act.lower("s", p, [x], _op(0, "s8", (2, 5), offset=4))
    a = {"op": "elementwise_add_s8", "shape": [1, 6], "input_1_offset": 1, "input_1_mult": 1 << 30,
         "input_1_shift": 0, "input_2_offset": 2, "input_2_mult": 1 << 30, "input_2_shift": 0, "left_shift": 20,
         "out_offset": 0, "out_mult": 1 << 30, "out_shift": -19, "activation": [-128, 127]}
    with pytest.raises(cmsis_calls.NotLowerable, match="input 2"):
        cmsis_calls_act.lower("s", a, [_op(0, "s8", (1, 6)), _op(1, "s32", (1, 6))], _op(2, "s8", (1, 6)))
    with pytest.raises(cmsis_calls.NotLowerable, match="want 2"):
        cmsis_calls_act.lower("s", a, [_op(0, "s8", (1, 6))], _op(2, "s8", (1, 6)))
