"""quantize(): float JAX models -> int8 models of blocks (host only)."""

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from every_variant import jitted
from jax import lax

from specializer.quant.graph import QuantizeError
from specializer.quant.ptq import QParams, activation_qparams, quantize
from specializer.tools import repo_root


def _example(name):
    spec = importlib.util.spec_from_file_location(f"_ex_{name}", repo_root() / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def _check_close(fn, model, qparams, gen, n, max_rel):
    """Held-out inputs: top-1 agreement on every input and max abs error within max_rel of
    the output's largest magnitude."""
    worst = 0.0
    for _ in range(n):
        x = gen()
        ref = np.asarray(fn(x, **fn.weights))
        got = model.run_float(qparams, x=x)
        assert got.shape == ref.shape
        assert ref.argmax() == got.argmax()
        worst = max(worst, float(np.abs(got - ref).max() / np.abs(ref).max()))
    assert worst <= max_rel, worst
    return worst


def test_kws_dscnn_quantized_close_to_float():
    fn = _example("kws_dscnn")
    shape = fn.example_inputs["x"].shape
    cal = np.random.default_rng(10)
    model, qp = quantize(fn, fn.weights, [{"x": cal.normal(size=shape).astype(np.float32)} for _ in range(16)])
    assert [s.kind for s in model.steps] == ["conv"] + ["depthwise", "conv"] * 4 + ["gap", "dense"]
    assert qp["w0"].dtype == np.int8 and qp["w0"].shape == (64, 10, 4, 1)     # OHWI
    assert qp["dw1"].shape == (1, 3, 3, 64) and qp["b0"].dtype == np.int32
    held = np.random.default_rng(11)
    # 16 calibration inputs, 10 held out: outputs within 3% of the output range, top-1 equal
    _check_close(fn, model, qp, lambda: held.normal(size=shape).astype(np.float32), 10, 0.03)
    # relu is folded into every conv's clamp at its output zero point
    assert all(s.block.activation[0] == s.block.output_offset for s in model.steps if s.kind in ("conv", "depthwise"))


def test_lenet_quantized_close_to_float_and_deterministic():
    fn = _example("lenet")
    shape = fn.example_inputs["x"].shape

    def run():
        cal = np.random.default_rng(20)
        return quantize(fn, fn.weights, [{"x": cal.uniform(0, 1, shape).astype(np.float32)} for _ in range(16)])
    model, qp = run()
    assert [s.kind for s in model.steps] == ["conv", "maxpool", "conv", "maxpool", "reshape", "dense", "dense", "dense"]
    held = np.random.default_rng(21)
    _check_close(fn, model, qp, lambda: held.uniform(0, 1, shape).astype(np.float32), 10, 0.05)
    model2, qp2 = run()
    assert list(qp) == list(qp2) and all(np.array_equal(qp[k], qp2[k]) for k in qp)
    assert [s.block for s in model.steps] == [s.block for s in model2.steps]
    x = model.inputs["x"].quantize(held.uniform(0, 1, shape))
    a = np.asarray(jitted(model)(x=x, **qp))
    assert np.array_equal(a, np.asarray(jitted(model2)(x=x, **qp2))) and a.dtype == np.int8


def _rooted(x, w):
    y = lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jnp.sqrt(y)


def test_unsupported_op_is_named():
    rng = np.random.default_rng(1)
    cal = [{"x": rng.normal(size=(1, 5, 5, 3)).astype(np.float32)}]
    with pytest.raises(QuantizeError, match=r"unsupported op 'sqrt' \(float32\[1,3,3,4\]\) at .*test_quantize.py"):
        quantize(_rooted, {"w": np.ones((3, 3, 3, 4), np.float32)}, cal)

    def exp_model(x, w):
        return jnp.exp(x @ w)
    with pytest.raises(QuantizeError, match=r"^quantize: unsupported op 'exp' \(float32\[1,4\]\)"):
        quantize(exp_model, {"w": np.ones((3, 4), np.float32)}, [{"x": np.ones((1, 3), np.float32)}])

    def softmax_and_exp(x, w):
        y = x @ w
        e = jnp.exp(y - jnp.max(y, axis=-1, keepdims=True))
        return e / jnp.sum(e, axis=-1, keepdims=True), e
    with pytest.raises(QuantizeError, match=r"unsupported op 'reduce_max'"):
        quantize(softmax_and_exp, {"w": np.ones((3, 4), np.float32)}, [{"x": np.ones((1, 3), np.float32)}])

    def padded_mean(x):
        return lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") / 9.0
    with pytest.raises(QuantizeError, match="padding not counted"):
        quantize(padded_mean, {}, [{"x": np.ones((1, 4, 4, 2), np.float32)}])


def _every_layer(x, w1, b1, dw, db, w2, b2, fc, fcb):
    """conv (stride 2, SAME) + relu, depthwise (multiplier 2) + bias + relu, avg pool 2x2,
    3x3 conv with explicit uneven padding, residual add + relu, max pool, flatten, dense, softmax."""
    dn = ("NHWC", "HWIO", "NHWC")
    y = jax.nn.relu(lax.conv_general_dilated(x, w1, (2, 2), "SAME", dimension_numbers=dn) + b1)   # 5x5x6
    z = jnp.maximum(lax.conv_general_dilated(y, dw, (1, 1), ((1, 1), (1, 1)), dimension_numbers=dn,
                                             feature_group_count=6) + db, 0.0)                      # 5x5x12
    z = lax.reduce_window(z, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "VALID") / 4.0             # 4x4x12
    y2 = lax.conv_general_dilated(y, w2, (1, 1), ((1, 0), (0, 1)), dimension_numbers=dn) + b2      # 4x4x12
    s = jax.nn.relu(z + y2)
    s = lax.reduce_window(s, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")              # 2x2x12
    return jax.nn.softmax(s.reshape(1, -1) @ fc + fcb)


def test_every_layer_kind():
    rng = np.random.default_rng(2)
    w = {"w1": (rng.normal(size=(3, 3, 3, 6)) / 4).astype(np.float32), "b1": (rng.normal(size=6) / 10).astype(np.float32),
         "dw": (rng.normal(size=(3, 3, 1, 12)) / 3).astype(np.float32), "db": (rng.normal(size=12) / 10).astype(np.float32),
         "w2": (rng.normal(size=(3, 3, 6, 12)) / 5).astype(np.float32), "b2": (rng.normal(size=12) / 10).astype(np.float32),
         "fc": (rng.normal(size=(48, 10)) / 7).astype(np.float32), "fcb": (rng.normal(size=10) / 10).astype(np.float32)}
    gen = lambda: rng.normal(size=(1, 9, 9, 3)).astype(np.float32)  # noqa: E731
    model, qp = quantize(_every_layer, w, [{"x": gen()} for _ in range(24)])
    assert [s.kind for s in model.steps] == ["conv", "depthwise", "avgpool", "conv", "add", "maxpool", "reshape",
                                            "dense", "softmax"]
    assert model.steps[4].block.activation[0] == model.steps[4].block.out_offset  # relu folded into add
    assert model.outputs == (QParams(1 / 256, -128),)
    for _ in range(8):
        x = gen()
        ref = np.asarray(_every_layer(x, **w))
        got = model.run_float(qp, x=x)
        assert np.abs(got - ref).max() <= 0.05 and ref.argmax() == got.argmax()
    # the int8 model is a plain JAX function of its inputs and params, in signature order
    hlo = jax.jit(model).lower(np.zeros((1, 9, 9, 3), np.int8), *qp.values()).compile().as_text()
    for op in ("convolve_s8", "depthwise_conv_s8", "avgpool_s8", "elementwise_add_s8", "max_pool_s8",
               "fully_connected_s8", "softmax_s8"):
        assert f"/cmsis_nn.{op}." in hlo


def test_activation_qparams():
    q = activation_qparams(-1.0, 3.0)
    assert q.scale == pytest.approx(4 / 255) and q.zero_point == round(-128 + 1 / (4 / 255))
    assert q.quantize(0.0) == q.zero_point  # zero is exact
    assert activation_qparams(0.0, 6.0).zero_point == -128
    assert q.dequantize(q.quantize(np.float32(1.5))) == pytest.approx(1.5, abs=q.scale / 2)
