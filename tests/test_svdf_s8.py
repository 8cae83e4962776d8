"""int8 SVDF (TFLite's SVDF with an int16 state, CMSIS-NN's arm_svdf_state_s16_s8, or with an int8
state and int8 time weights, arm_svdf_s8; every test runs both, `bits` the state's): TFLite Micro's
reference kernel (svdf_common.cc EvalIntegerSvdfReference) read literally in NumPy and checked
against TFLite Micro itself over several invocations (the state carried between them); the
block (specializer.quant.blocks.svdf) and the shim's function on the host against that reading
from random states; the .tflite reader against TFLite Micro; what the reader refuses. Every
variant on QEMU: tests/test_svdf_models.py (an imported SVDF model, and a streaming model
written with the block, its state carried over frames)."""

from __future__ import annotations

import ctypes

import jax
import numpy as np
import pytest
from test_cmsis_nn import (STRUCT, Activation, Context, Dims, PerTensor, host, nn_call, ptr,  # noqa: F401
                           requantize_scalar)
from test_tflite_import import OP, Tflm, act8, fb, me, model_bytes, operator

from specializer.capture import cmsis_calls_svdf
from specializer.errors import UserError
from specializer.importers.tflite import read_tflite
from specializer.quant import blocks
from specializer.quant.params import SvdfParams

SvdfStruct = STRUCT["cmsis_nn_svdf_params"]

# batch, input size, filters, rank, memory, bias, input zero point, output zero point
CASES = {
    "rank1": (1, 12, 8, 1, 5, True, 3, -5),
    "rank2_odd": (1, 13, 6, 2, 7, True, -9, 11),
    "batch2": (2, 10, 9, 3, 4, True, 0, 0),
    "no_bias": (1, 10, 9, 3, 4, False, 0, 0),
    "memory1": (1, 7, 4, 1, 1, True, -128, -20),
    "kws_like": (1, 40, 32, 1, 8, True, -3, -7),
}
IN_SCALE, WF_SCALE, WT_SCALE = 0.05, 0.02, 1e-4
# TFLite Micro's Prepare reads the bias's scale (svdf_common.cc, its TODO #1751): without a bias
# it crashes, so the model without one is checked against the reading only
TFLM_CASES = [n for n in CASES if CASES[n][5]]


# per state type: (its TFLite type, the new values' std the scales aim at, the time weights' bound
# and their std uniform in it, the bias's bound: below the time sums' spread)
KINDS = {16: (fb.TensorType.INT16, 6000, 20000, 11500, 200000), 8: (fb.TensorType.INT8, 40, 127, 74, 3000)}
BITS = [16, 8]


def svdf_model(name, seed=0, *, bits=16, wt_type=None, state_zp=0, state_data=None, rank=None) -> bytes:
    """One SVDF operator as TFLite's converter writes a fully integer one (op version 3); `bits`
    the state's and the time weights' (`wt_type` overrides the time weights' type)."""
    batch, n_in, filters, r, memory, bias, in_zp, out_zp = CASES[name]
    state_type, state_std, wt_max, wt_std, b_max = KINDS[bits]
    wt_type = state_type if wt_type is None else wt_type
    # scales that spread the state's new values and the outputs (std about 40) over their
    # ranges: uniform int8 data has a std of about 74
    wf_s, wt_s = WF_SCALE, WT_SCALE
    in_q = (IN_SCALE, in_zp)
    state_s = IN_SCALE * WF_SCALE * 74 * 73 * np.sqrt(n_in) / state_std
    out_q = (state_s * WT_SCALE * wt_std * state_std * np.sqrt(r * min(memory, 3)) / 40, out_zp)
    rng = np.random.default_rng(seed)
    units = filters // r
    x = act8((batch, n_in), *in_q, "x")
    wf = me.Tensor(shape=(filters, n_in), dtype=fb.TensorType.INT8, quantization=me.Quantization(wf_s, 0),
                   name="weights_feature", data=rng.integers(-127, 128, (filters, n_in)).astype(np.int8))
    wt_dtype = {fb.TensorType.INT16: np.int16, fb.TensorType.INT8: np.int8, fb.TensorType.INT32: np.int32}[wt_type]
    wt = me.Tensor(shape=(filters, memory), dtype=wt_type, quantization=me.Quantization(wt_s, 0),
                   name="weights_time", data=rng.integers(-wt_max, wt_max, (filters, memory)).astype(wt_dtype))
    ins = [x, wf, wt]
    if bias:
        ins.append(me.Tensor(shape=(units,), dtype=fb.TensorType.INT32,
                             quantization=me.Quantization(float(np.float32(state_s) * np.float32(wt_s)), 0),
                             name="bias", data=rng.integers(-b_max, b_max, units).astype(np.int32)))
    else:
        ins.append(None)
    state = me.Tensor(shape=(batch, filters * memory), dtype=state_type,
                      quantization=me.Quantization(float(state_s), state_zp), name="state",
                      data=state_data)
    state.is_variable = True
    ins.append(state)
    y = act8((batch, units), *out_q, "y")
    o = fb.SVDFOptionsT()
    o.rank = r if rank is None else rank
    op = operator(OP.SVDF, ins, [y], o, fb.BuiltinOptions.SVDFOptions)
    return model_bytes([op], [x], [y])


# ---------------------------------------------------------------- TFLite Micro's kernel, read literally

def wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def reference(p: SvdfParams, x, wf, wt, bias, state):
    """EvalIntegerSvdfReference<int16_t or int8_t> step by step: (output, new state)."""
    s = [int(v) for v in state.reshape(-1)]
    s = s[1:] + [0]  # the whole buffer moves one place; the last place is written below
    fm = p.filters * p.memory
    out = np.zeros((p.batch, p.units), np.int8)
    for b in range(p.batch):
        for f in range(p.filters):
            dot = 0
            for i in range(p.input_size):
                dot = wrap32(dot + int(wf[f, i]) * (int(x[b, i]) - p.input_zero_point))
            lo, hi = p.state_range
            dot = min(max(requantize_scalar(dot, p.feature_multiplier, p.feature_shift), lo), hi)
            s[b * fm + f * p.memory + p.memory - 1] = dot
        sums = []
        for f in range(p.filters):
            t = 0
            for m in range(p.memory):
                t = wrap32(t + int(wt[f, m]) * s[b * fm + f * p.memory + m])
            sums.append(t)
        for u in range(p.units):
            acc = int(bias[u]) if bias is not None else 0
            for r in range(p.rank):
                acc = wrap32(acc + sums[u * p.rank + r])
            v = requantize_scalar(acc, p.output_multiplier, p.output_shift) + p.output_zero_point
            out[b, u] = min(max(v, -128), 127)
    return out, np.array(s, state_type(p)).reshape(p.state_shape)


def state_type(p: SvdfParams):
    return np.int16 if p.state_bits == 16 else np.int8


def rand_state(rng, p: SvdfParams):
    lo, hi = p.state_range
    return rng.integers(lo, hi + 1, p.state_shape).astype(state_type(p))


def read(data: bytes, tmp_path):
    path = tmp_path / "svdf.tflite"
    path.write_bytes(data)
    model = read_tflite(path)
    layer = model.layers[0]
    w = model.weights
    n = layer.op
    return model, layer.block, w[f"w{n}"], w[f"t{n}"], w.get(f"b{n}")


def rand_input(rng, p: SvdfParams):
    return rng.integers(-128, 128, (p.batch, p.input_size)).astype(np.int8)


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("name", TFLM_CASES)
def test_reading_is_tflite_micros_kernel_over_steps(name, bits, tmp_path):
    """Five invocations of TFLite Micro (its state carried between them) equal the reading
    chained from a zero state: the reading's state handling is TFLite Micro's."""
    data = svdf_model(name, bits=bits)
    _, p, wf, wt, b = read(data, tmp_path)
    assert p.state_bits == bits and wt.dtype == state_type(p)
    tflm = Tflm(data)
    rng = np.random.default_rng(7)
    state = np.zeros(p.state_shape, state_type(p))
    outs = []
    for _ in range(5):
        x = rand_input(rng, p)
        want = tflm.run([x], 1)[0][0]
        got, state = reference(p, x, wf, wt, b, state)
        np.testing.assert_array_equal(got, want)
        outs.append(got)
    outs = np.concatenate(outs).ravel()
    assert len(np.unique(outs[(outs > -128) & (outs < 127)])) >= min(8, outs.size // 3), outs  # not all clamp
    assert np.count_nonzero(state) > state.size // 3 or p.memory == 1


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("name", CASES)
def test_block_equals_the_reading_from_any_state(name, bits, tmp_path):
    _, p, wf, wt, b = read(svdf_model(name, bits=bits), tmp_path)
    rng = np.random.default_rng(3)
    run = jax.jit(lambda x, s: blocks.svdf(x, wf, wt, b, s, p))
    for k in range(3):
        x = rand_input(rng, p)
        state = rand_state(rng, p) if k else np.zeros(p.state_shape, state_type(p))
        out, new = run(x, state)
        want_out, want_state = reference(p, x, wf, wt, b, state)
        np.testing.assert_array_equal(np.asarray(out), want_out)
        np.testing.assert_array_equal(np.asarray(new), want_state)


def run_shim(lib, p: SvdfParams, x, wf, wt, b, state):
    fn = "arm_svdf_state_s16_s8" if p.state_bits == 16 else "arm_svdf_s8"
    getattr(lib, fn).restype = ctypes.c_int32
    a_size, b_size = cmsis_calls_svdf.svdf_buffer_sizes(p.to_dict())
    buf_a, buf_b = np.zeros(a_size // 4, np.int32), np.zeros(b_size // 4, np.int32)
    params = SvdfStruct(rank=p.rank, input_offset=p.input_zero_point, output_offset=p.output_zero_point,
                        input_activation=Activation(*p.state_range),
                        output_activation=Activation(min=-128, max=127))
    s = np.array(state, state_type(p))
    out = np.full((p.batch, p.units), 99, np.int8)
    own = {} if p.state_bits == 16 else {"ctx": ctypes.byref(Context(buf=None, size=0))}
    st = nn_call(lib, fn, **own, input_ctx=ctypes.byref(Context(buf=buf_a.ctypes.data, size=a_size)),
                 output_ctx=ctypes.byref(Context(buf=buf_b.ctypes.data, size=b_size)),
                 svdf_params=ctypes.byref(params),
                 input_quant_params=ctypes.byref(PerTensor(p.feature_multiplier, p.feature_shift)),
                 output_quant_params=ctypes.byref(PerTensor(p.output_multiplier, p.output_shift)),
                 input_dims=ctypes.byref(Dims(p.batch, p.input_size, 1, 1)), input_data=ptr(x),
                 state_dims=ctypes.byref(Dims(*p.state_shape, 1, 1)), state_data=ptr(s),
                 weights_feature_dims=ctypes.byref(Dims(p.filters, p.input_size, 1, 1)), weights_feature_data=ptr(wf),
                 weights_time_dims=ctypes.byref(Dims(p.filters, p.memory, 1, 1)), weights_time_data=ptr(wt),
                 bias_dims=ctypes.byref(Dims(p.units, 1, 1, 1)), bias_data=ptr(b),
                 output_dims=ctypes.byref(Dims(p.batch, p.units, 1, 1)), output_data=ptr(out))
    assert st == 0
    return out, s


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("name", CASES)
def test_shim_equals_the_reading_from_any_state(host, name, bits, tmp_path):
    _, p, wf, wt, b = read(svdf_model(name, bits=bits), tmp_path)
    rng = np.random.default_rng(5)
    for _ in range(2):
        x = rand_input(rng, p)
        state = rand_state(rng, p)
        out, new = run_shim(host, p, x, np.ascontiguousarray(wf), np.ascontiguousarray(wt), b, state)
        want_out, want_state = reference(p, x, wf, wt, b, state)
        np.testing.assert_array_equal(out, want_out)
        np.testing.assert_array_equal(new, want_state)


def test_shim_refuses_filters_that_are_not_a_multiple_of_the_rank(host, tmp_path):
    _, p, wf, wt, b = read(svdf_model("rank2_odd"), tmp_path)
    host.arm_svdf_state_s16_s8.restype = ctypes.c_int32
    params = SvdfStruct(rank=4)
    buf = np.zeros(64, np.int32)
    st = nn_call(host, "arm_svdf_state_s16_s8", input_ctx=ctypes.byref(Context(buf=buf.ctypes.data, size=256)),
                 output_ctx=ctypes.byref(Context(buf=buf.ctypes.data, size=256)), svdf_params=ctypes.byref(params),
                 input_quant_params=None, output_quant_params=None, input_dims=ctypes.byref(Dims(1, 13, 1, 1)),
                 input_data=None, state_dims=None, state_data=None,
                 weights_feature_dims=ctypes.byref(Dims(6, 13, 1, 1)), weights_feature_data=None,
                 weights_time_dims=ctypes.byref(Dims(6, 7, 1, 1)), weights_time_data=None, bias_dims=None,
                 bias_data=None, output_dims=None, output_data=None)
    assert st == -1  # ARM_CMSIS_NN_ARG_ERROR: 6 filters of rank 4


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("name", TFLM_CASES)
def test_reader_equals_tflite_micro(name, bits, tmp_path):
    """The imported model (each call from a zero state) against a fresh TFLite Micro
    interpreter's first invocation, on several inputs."""
    data = svdf_model(name, bits=bits)
    model, p, *_ = read(data, tmp_path)
    rng = np.random.default_rng(11)
    xs = np.stack([rand_input(rng, p) for _ in range(4)])
    got = np.asarray(jax.jit(jax.vmap(model))(xs))
    for x, g in zip(xs, got):
        tflm = Tflm(data)
        np.testing.assert_array_equal(g, tflm.run([x], 1)[0][0])


@pytest.mark.parametrize("kw, message", [
    (dict(wt_type=fb.TensorType.INT8), r"state \(tensor 4\) is INT16; the reader takes INT8 \(TFLite Micro reads"),
    (dict(bits=8, wt_type=fb.TensorType.INT16), r"state \(tensor 4\) is INT8; the reader takes INT16"),
    (dict(wt_type=fb.TensorType.INT32), r"time weights \(tensor 2\) is INT32; the reader takes INT16 or INT8"),
    (dict(state_zp=3), "zero point 3; an int16 state's is 0"),
    (dict(bits=8, state_zp=3), "zero point 3; CMSIS-NN's arm_svdf_s8 takes an int8 state's as 0"),
    (dict(state_data=np.ones(42, np.int16)), "has initial values"),
    (dict(rank=4), "do not fit input"),
], ids=["int8_time_weights_int16_state", "int16_time_weights_int8_state", "int32_time_weights",
        "state_zero_point", "int8_state_zero_point", "initial_state", "rank"])
def test_reader_refuses_in_one_line(kw, message, tmp_path):
    path = tmp_path / "bad.tflite"
    path.write_bytes(svdf_model("rank2_odd", **kw))
    with pytest.raises(UserError, match=message) as e:
        read_tflite(path)
    assert "\n" not in str(e.value) and "bad.tflite" in str(e.value) and "SVDF" in str(e.value)


def test_params_refuse_filters_that_are_not_a_multiple_of_the_rank():
    with pytest.raises(ValueError, match="multiple of the rank"):
        SvdfParams(batch=1, input_size=4, filters=6, memory=3, rank=4, input_zero_point=0, output_zero_point=0,
                   feature_multiplier=1 << 30, feature_shift=0, output_multiplier=1 << 30, output_shift=0)


def keyword_svdf(seed=0, bits=16) -> bytes:
    """A small keyword model's tail as TFLite's converter writes one: SVDF (40 features, 32
    filters of rank 2, memory 8; its state and time weights of `bits`) -> FULLY_CONNECTED
    (16 -> 12) -> SOFTMAX."""
    from test_tflite_import import const

    batch, n_in, filters, r, memory, in_zp, out_zp = 1, 40, 32, 2, 8, -3, -7
    state_type, state_std, wt_max, wt_std, b_max = KINDS[bits]
    rng = np.random.default_rng(seed)
    units = filters // r
    state_s = IN_SCALE * WF_SCALE * 74 * 73 * np.sqrt(n_in) / state_std
    h_s = state_s * WT_SCALE * wt_std * state_std * np.sqrt(r * 3) / 40
    x = act8((batch, n_in), IN_SCALE, in_zp, "x")
    wf = const(rng.integers(-127, 128, (filters, n_in)).astype(np.int8), [WF_SCALE], None, "weights_feature")
    wt = me.Tensor(shape=(filters, memory), dtype=state_type, quantization=me.Quantization(WT_SCALE, 0),
                   name="weights_time", data=rng.integers(-wt_max, wt_max, (filters, memory)).astype(
                       np.int16 if bits == 16 else np.int8))
    bias_s = float(np.float32(state_s) * np.float32(WT_SCALE))
    b = const(rng.integers(-b_max, b_max, units).astype(np.int32), [bias_s], None, "bias")
    state = me.Tensor(shape=(batch, filters * memory), dtype=state_type,
                      quantization=me.Quantization(float(state_s), 0), name="state")
    state.is_variable = True
    h = act8((batch, units), h_s, out_zp, "h")
    # logits of std about 40 steps of 0.05 (softmax spreads rather than saturates): the dense
    # layer's sums (about 40 * 73 * sqrt(16)) scaled to them
    logit_s = 0.05
    fc_s = 40 * logit_s / (h_s * 40 * 73 * 4)
    wfc = const(rng.integers(-127, 128, (12, units)).astype(np.int8), [fc_s], None, "fc")
    bfc = const(rng.integers(-3000, 3000, 12).astype(np.int32), [float(np.float32(h_s) * np.float32(fc_s))], None,
                "fc_bias")
    logits, y = act8((batch, 12), logit_s, 2, "logits"), act8((batch, 12), 1 / 256, -128, "y")
    o = fb.SVDFOptionsT()
    o.rank = r
    ops = [operator(OP.SVDF, [x, wf, wt, b, state], [h], o, fb.BuiltinOptions.SVDFOptions),
           operator(OP.FULLY_CONNECTED, [h, wfc, bfc], [logits], fb.FullyConnectedOptionsT(),
                    fb.BuiltinOptions.FullyConnectedOptions)]
    so = fb.SoftmaxOptionsT()
    so.beta = 1.0
    ops.append(operator(OP.SOFTMAX, [logits], [y], so, fb.BuiltinOptions.SoftmaxOptions))
    return model_bytes(ops, [x], [y])
