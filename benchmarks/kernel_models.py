"""One model per kernel shape for scripts/kernel_benchmark.py: each is a single dot or
convolution (no bias, no activation), so its est. cycles are the kernel's own; the `*_int8`
models are the same layers quantized (specializer.quant: a CMSIS-NN s8 call each, with its
requantization). Fixed seeds.

`dense_pruned_<pct>` are the same 1x256 -> 256 dense layer with <pct>% of the weights
magnitude-pruned to zero, for the sparsity sweep."""
import jax.numpy as jnp
import numpy as np
from jax import lax

from specializer.quant.ptq import quantize

DN = ("NHWC", "HWIO", "NHWC")


def _rng(seed):
    return np.random.default_rng(seed)


def _w(rng, *shape):
    return (rng.normal(size=shape) / np.sqrt(np.prod(shape[:-1]))).astype(np.float32)


def _x(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)


def dense_m1(x, w):
    return x @ w


def dense_m8(x, w):
    return x @ w


def conv1x1(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=DN)


def conv3x3(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN)


def depthwise3x3(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN,
                                    feature_group_count=x.shape[-1])


def depthwise3x3_s2(x, w):
    return lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=DN,
                                    feature_group_count=x.shape[-1])


_r = _rng(11)
dense_m1.example_inputs = {"x": _x(_r, 1, 256)}
dense_m1.weights = {"w": _w(_r, 256, 256)}
dense_m8.example_inputs = {"x": _x(_r, 8, 128)}
dense_m8.weights = {"w": _w(_r, 128, 128)}
conv1x1.example_inputs = {"x": _x(_r, 1, 16, 16, 32)}
conv1x1.weights = {"w": _w(_r, 1, 1, 32, 32)}
conv3x3.example_inputs = {"x": _x(_r, 1, 12, 12, 16)}
conv3x3.weights = {"w": _w(_r, 3, 3, 16, 16)}
depthwise3x3.example_inputs = {"x": _x(_r, 1, 24, 24, 32)}
depthwise3x3.weights = {"w": _w(_r, 3, 3, 1, 32)}
depthwise3x3_s2.example_inputs = {"x": _x(_r, 1, 24, 24, 32)}
depthwise3x3_s2.weights = {"w": _w(_r, 3, 3, 1, 32)}


def depthwise3x3_m2(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=DN,
                                    feature_group_count=x.shape[-1])


_r2 = _rng(17)  # its own stream: the models above keep their weights
depthwise3x3_m2.example_inputs = {"x": _x(_r2, 1, 24, 24, 7)}
depthwise3x3_m2.weights = {"w": _w(_r2, 3, 3, 1, 14)}


def _int8(fn, name):
    """fn quantized post-training (specializer.quant: CMSIS-NN's s8 kernels), calibrated on 8 inputs."""
    cal = _rng(13)
    shape = fn.example_inputs["x"].shape
    model, params = quantize(fn, fn.weights, [{"x": _x(cal, *shape)} for _ in range(8)], name=name)
    model.example_inputs = {"x": model.inputs["x"].quantize(fn.example_inputs["x"])}
    model.weights = params
    return model


dense_int8 = _int8(dense_m1, "dense_int8")
conv1x1_int8 = _int8(conv1x1, "conv1x1_int8")
conv3x3_int8 = _int8(conv3x3, "conv3x3_int8")
depthwise3x3_int8 = _int8(depthwise3x3, "depthwise3x3_int8")
depthwise3x3_s2_int8 = _int8(depthwise3x3_s2, "depthwise3x3_s2_int8")
depthwise3x3_m2_int8 = _int8(depthwise3x3_m2, "depthwise3x3_m2_int8")

KERNELS = {  # name -> (what, MACs)
    "dense_m1": ("dense 1x256 · 256x256", 256 * 256),
    "dense_m8": ("dense 8x128 · 128x128", 8 * 128 * 128),
    "conv1x1": ("conv 1x1, 16x16x32 -> 32", 16 * 16 * 32 * 32),
    "conv3x3": ("conv 3x3 SAME, 12x12x16 -> 16", 12 * 12 * 16 * 16 * 9),
    "depthwise3x3": ("depthwise 3x3 SAME, 24x24x32", 24 * 24 * 32 * 9),
    "depthwise3x3_m2": ("depthwise 3x3 SAME, 24x24x7, multiplier 2", 24 * 24 * 14 * 9),
    "dense_int8": ("int8 dense 1x256 · 256x256", 256 * 256),
    "conv1x1_int8": ("int8 conv 1x1, 16x16x32 -> 32", 16 * 16 * 32 * 32),
    "conv3x3_int8": ("int8 conv 3x3 SAME, 12x12x16 -> 16", 12 * 12 * 16 * 16 * 9),
    "depthwise3x3_int8": ("int8 depthwise 3x3 SAME, 24x24x32", 24 * 24 * 32 * 9),
    "depthwise3x3_s2_int8": ("int8 depthwise 3x3 SAME stride 2, 24x24x32", 12 * 12 * 32 * 9),
    "depthwise3x3_m2_int8": ("int8 depthwise 3x3 SAME, 24x24x7, multiplier 2", 24 * 24 * 14 * 9),
}

SPARSITIES = (0, 50, 70, 80, 90, 95)


def _pruned(pct):
    def dense_pruned(x, w):
        return x @ w

    r = _rng(12)
    w = _w(r, 256, 256)
    if pct:
        cut = np.quantile(np.abs(w), pct / 100)
        w = np.where(np.abs(w) > cut, w, 0.0).astype(np.float32)
    dense_pruned.example_inputs = {"x": _x(r, 1, 256)}
    dense_pruned.weights = {"w": w}
    dense_pruned.__name__ = f"dense_pruned_{pct}"
    return dense_pruned


for _p in SPARSITIES:
    globals()[f"dense_pruned_{_p}"] = _pruned(_p)
