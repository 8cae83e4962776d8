"""ONNX ops that move values without arithmetic: Concat and Resize (mode nearest). The same for
float and int8 data: a DequantizeLinear's output stays int8 through them with its quantization
(a QDQ model's Q after them reads it back unchanged), since picking or joining values does not
change them. Inputs of a Concat quantized differently are joined as their float values (what
onnx.reference computes), and the Q after it quantizes the result."""

from __future__ import annotations

import numpy as np
import jax.numpy as jnp

from specializer.importers.onnx_layer import NHWC, Flat, NodeContext, identity, inverse, spatial_rank4


def concat(c: NodeContext) -> None:
    c.check_attrs({"axis"})
    n = len(c.node.inputs)
    if any(not c.present(k) for k in range(n)) or any(c.is_const(k) for k in range(n)):
        raise c.refuse("every input must be a computed value (a constant joined to one is not supported)")
    xs = [c.act(k) for k in range(n)]
    rank = xs[0].rank
    axis = int(c.attr("axis", 0))
    if not -rank <= axis < rank:
        raise c.refuse(f"axis={axis} is out of range for rank {rank}")
    axis %= rank
    if len({(x.dtype, x.quant, x.deq) for x in xs}) != 1:  # differently quantized: as float values
        xs = [c.fact(k) for k in range(n)]
    layout = identity(rank) if isinstance(xs[0].layout, Flat) else xs[0].layout
    xs = [c.b.in_layout(x, layout) for x in xs]
    at = inverse(layout)[axis]  # JAX array = ONNX value .transpose(layout)
    first = xs[0]
    c.emit(tuple(xs), c.out(layout, first.dtype, first.quant, first.deq), lambda *a: jnp.concatenate(a, axis=at))


def resize_source_indices(c: NodeContext, hw: tuple[int, int], out_hw: tuple[int, int]) -> np.ndarray:
    """For each output pixel (row-major over out_hw), the input pixel (row-major over hw) it takes:
    onnx.reference's Resize itself run on the pixels' indices, so every coordinate transformation
    and rounding mode is the reference's own."""
    h, w = hw
    feeds = {"x": np.arange(h * w, dtype=np.float32).reshape(1, 1, h, w)}
    ins = ["x"]
    for k, n in ((1, "roi"), (2, "scales"), (3, "sizes")):
        if c.present(k):
            feeds[n] = np.asarray(c.const(k, n))
            ins.append(n)
            if n in ("scales", "sizes") and feeds[n].size == 4:  # N and C stay
                feeds[n] = feeds[n].copy()
                feeds[n][:2] = 1
        else:
            ins.append("")
    while ins and ins[-1] == "":
        ins.pop()
    (y,) = c.run_reference("Resize", ins, ["y"], feeds, c.node.attrs, "onnx.reference computing its sampling")
    if y.shape != (1, 1, *out_hw):
        raise c.refuse(f"resizes {list(hw)} to {list(y.shape[2:])}, not the output's {list(out_hw)}")
    return y.reshape(-1).astype(np.int64)


def resize(c: NodeContext) -> None:
    """Resize with mode nearest over H and W: a gather of input pixels with constant indices."""
    c.check_attrs({"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                   "extrapolation_value", "antialias", "axes", "keep_aspect_ratio_policy"})
    mode = c.attr("mode", "nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode != "nearest":
        raise c.refuse(f"mode={mode} is not supported (nearest only: a resize that picks values)")
    ctm = c.attr("coordinate_transformation_mode", "half_pixel")
    ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    if ctm == "tf_crop_and_resize":
        raise c.refuse("coordinate_transformation_mode=tf_crop_and_resize is not supported (it fills outside values)")
    if c.attr("axes") is not None:
        raise c.refuse("the axes attribute is not supported (scales or sizes for all four axes)")
    x = c.act(0)
    spatial_rank4(c, x)
    out = c.out_shape
    if len(out) != 4 or tuple(out[:2]) != tuple(x.shape[:2]):
        raise c.refuse(f"resizes the batch or channel axis ({list(x.shape)} -> {list(out)})")
    for k, n in ((2, "scales"), (3, "sizes")):
        if c.present(k):
            v = np.asarray(c.const(k, n))
            if v.size == 0:  # opset 11-12: an empty scales beside sizes stands for none
                continue
            if v.size != 4 or (n == "scales" and tuple(v[:2]) != (1, 1)):
                raise c.refuse(f"{n}={v.tolist()}: the reader takes 4 values, batch and channel unchanged")
    hw, out_hw = tuple(x.shape[2:]), tuple(out[2:])
    idx = resize_source_indices(c, hw, out_hw)
    x = c.b.in_layout(x, NHWC)
    n_, ch = x.shape[0], x.shape[1]

    def run(a):
        flat = a.reshape(n_, hw[0] * hw[1], ch)
        return jnp.take(flat, jnp.asarray(idx, jnp.int32), axis=1).reshape(n_, *out_hw, ch)

    c.emit((x,), c.out(NHWC, x.dtype, x.quant, x.deq), run)


OPS = {"Concat": concat, "Resize": resize}
