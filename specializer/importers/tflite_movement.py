"""TFLite operators that move values without arithmetic: PAD, PADV2, CONCATENATION, TRANSPOSE,
RESIZE_NEAREST_NEIGHBOR. The same for int8, int16 (16x8 files) and float data: TFLite Micro's
integer kernels copy the values (no rescaling, whatever the output's quantization says), so the
layer's JAX function is the float one's on integer arrays. int16 tensors have zero point 0 (TFLite
Micro's checks) and PAD fills them with 0.

Their shape arguments (paddings, permutation, output size) are constant inputs, read here; where
TFLite Micro requires matching quantization (CONCATENATION's inputs and output, PADV2's pad
value) a file that breaks it is refused, as TFLite Micro's Prepare refuses it. Index arithmetic
that TFLite does in float32 (nearest-neighbour source pixels) is done here in float32 too.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from specializer.importers.tflite_file import ACTIVATION_NAMES, TensorRecord
from specializer.importers.tflite_layer import Layer, OpContext


def _ints(c: OpContext, k: int, what: str) -> np.ndarray:
    """Constant integer input k (INT32, or INT64 as TFLite allows for paddings)."""
    t = c.tensor(k)
    if t is None or t.data is None:
        raise c.refuse(f"{what} (input {k}) must be a constant")
    if t.type not in ("INT32", "INT64"):
        raise c.refuse(f"{what} (input {k}) is {t.type}, expected INT32")
    return np.asarray(t.data, np.int64)


def _quant(t: TensorRecord):
    return None if t.quant is None else (t.quant.scales, t.quant.zero_points)


def _same_type(c: OpContext, x: TensorRecord) -> None:
    if c.out.type != x.type:
        raise c.refuse(f"output is {c.out.type}, input {x.type}")
    if x.type == "INT16":
        for what, t in (("input", x), ("output", c.out)):
            if t.quant is None or any(z != 0 for z in t.quant.zero_points):
                raise c.refuse(f"the int16 {what} (tensor {t.index}) needs zero point 0 (16x8 is symmetric)")


def pad(c: OpContext, x: TensorRecord) -> Layer:
    """PAD / PADV2: paddings [rank, 2] (before, after); the value is PADV2's constant input 2, else
    0 for float and, for int8, the output's zero point (TFLite Micro's choice)."""
    _same_type(c, x)
    p = _ints(c, 1, "the paddings")
    rank = len(x.shape)
    if p.shape != (rank, 2):
        raise c.refuse(f"paddings {list(p.shape)} are not [{rank}, 2] for the input {list(x.shape)}")
    if (p < 0).any():
        raise c.refuse(f"negative paddings {p.tolist()}")
    want = tuple(int(s + a + b) for s, (a, b) in zip(x.shape, p))
    if tuple(c.out.shape) != want:
        raise c.refuse(f"output {list(c.out.shape)} is not the padded input {list(want)}")
    v = c.tensor(2) if c.op.name == "PADV2" else None
    if v is not None:
        if v.data is None or v.type != x.type or v.data.size != 1:
            raise c.refuse(f"the pad value (input 2) must be one constant {x.type}")
        if x.type == "INT8" and _quant(v) != _quant(c.out):
            raise c.refuse("the pad value's quantization differs from the output's")
        if x.type == "INT16" and _quant(v) is not None and any(v.quant.zero_points):
            raise c.refuse("the int16 pad value needs zero point 0 (16x8 is symmetric)")
        value = v.data.reshape(()).item()
    elif x.type == "INT8":
        if c.out.quant is None:
            raise c.refuse("the int8 output has no quantization")
        value = int(c.out.quant.zero_points[0])
    else:  # float, and int16: TFLite Micro pads it with 0 (its zero point)
        value = 0.0
    widths = tuple((int(a), int(b)) for a, b in p)
    return c.layer(x, (), None, lambda a: jnp.pad(a, widths, constant_values=jnp.asarray(value, a.dtype)))


def concatenation(c: OpContext, x: TensorRecord) -> Layer:
    """CONCATENATION along `axis` (negative: from the end); no fused activation, and for int8 and
    int16 the inputs quantized as the output (TFLite Micro's kernels copy the values: for int8 it
    refuses other scales, for int16 it would copy them unscaled, which the reader refuses too)."""
    act = c.options["fusedActivationFunction"]
    if act != 0:
        raise c.refuse(f"fused activation {ACTIVATION_NAMES.get(act, act)} is not supported")
    ins = [c.tensor(k) for k in range(len(c.op.inputs))]
    for k, t in enumerate(ins):
        if t is None or t.data is not None:
            raise c.refuse(f"input {k} must be a computed tensor")
        if t.type != x.type or len(t.shape) != len(x.shape):
            raise c.refuse(f"input {k} {t.type}{list(t.shape)} does not match input 0 {x.type}{list(x.shape)}")
        if x.type in ("INT8", "INT16") and _quant(t) != _quant(c.out):
            raise c.refuse(f"input {k}'s quantization differs from the output's (TFLite Micro does not rescale)")
    _same_type(c, x)
    rank = len(x.shape)
    axis = c.options["axis"]
    if not -rank <= axis < rank:
        raise c.refuse(f"axis {axis} is outside the input's {rank} dimensions")
    axis %= rank
    for k, t in enumerate(ins):
        if any(a != b for d, (a, b) in enumerate(zip(t.shape, x.shape)) if d != axis):
            raise c.refuse(f"input {k} {list(t.shape)} differs from input 0 {list(x.shape)} off axis {axis}")
    want = list(x.shape)
    want[axis] = sum(t.shape[axis] for t in ins)
    if list(c.out.shape) != want:
        raise c.refuse(f"output {list(c.out.shape)} is not the concatenation {want}")
    return c.layer(x, (), None, lambda *a: jnp.concatenate(a, axis=axis), inputs=tuple(t.index for t in ins))


def transpose(c: OpContext, x: TensorRecord) -> Layer:
    """TRANSPOSE by the constant permutation (input 1): output dim i is input dim perm[i]."""
    _same_type(c, x)
    perm = _ints(c, 1, "the permutation")
    rank = len(x.shape)
    if sorted(perm.tolist()) != list(range(rank)):
        raise c.refuse(f"permutation {perm.tolist()} is not one of the input's {rank} dimensions")
    order = tuple(int(i) for i in perm)
    want = [x.shape[i] for i in order]
    if list(c.out.shape) != want:
        raise c.refuse(f"output {list(c.out.shape)} is not the transposed input {want}")
    return c.layer(x, (), None, lambda a: jnp.transpose(a, order))


def nearest_sources(out_size: int, in_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """The input row (or column) each output row reads: TFLite's GetNearestNeighbor, in float32."""
    f32 = np.float32
    if align_corners and out_size > 1:
        scale = f32(in_size - 1) / f32(out_size - 1)
    else:
        scale = f32(in_size) / f32(out_size)
    offset = f32(0.5) if half_pixel else f32(0.0)
    pos = (np.arange(out_size, dtype=f32) + offset) * scale  # float32 products, as the C++
    # TfLiteRound: halves away from zero (pos >= 0); else floor
    src = np.floor(pos + f32(0.5)) if align_corners else np.floor(pos)
    src = np.minimum(src.astype(np.int64), in_size - 1)
    return np.maximum(src, 0) if half_pixel else src


def resize_nearest(c: OpContext, x: TensorRecord) -> Layer:
    """RESIZE_NEAREST_NEIGHBOR of an NHWC input to the constant size (input 1: height, width)."""
    _same_type(c, x)
    if len(x.shape) != 4:
        raise c.refuse(f"input {list(x.shape)} is not NHWC")
    size = _ints(c, 1, "the size")
    if size.shape != (2,) or (size < 1).any():
        raise c.refuse(f"size {size.tolist()} is not two positive numbers")
    oh, ow = (int(v) for v in size)
    if list(c.out.shape) != [x.shape[0], oh, ow, x.shape[3]]:
        raise c.refuse(f"output {list(c.out.shape)} is not the input resized to {oh}x{ow}")
    align, half = bool(c.options["alignCorners"]), bool(c.options["halfPixelCenters"])
    rows = nearest_sources(oh, x.shape[1], align, half)
    cols = nearest_sources(ow, x.shape[2], align, half)
    return c.layer(x, (), None, lambda a: a[:, rows][:, :, cols])


OPS = {"PAD": pad, "PADV2": pad, "CONCATENATION": concatenation, "TRANSPOSE": transpose,
       "RESIZE_NEAREST_NEIGHBOR": resize_nearest}
