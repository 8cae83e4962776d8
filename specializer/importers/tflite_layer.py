"""One TFLite operator as a layer, and what the int8 and float op builders share: reading an op's
inputs, its constants (the model's weights), its padding and strides, in TFLite's conventions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specializer.importers.graph_model import Layer  # noqa: F401  (the op builders import it from here)
from specializer.importers.tflite_file import PADDING_NAMES, GraphRecord, OpRecord, TensorRecord, refuse_op

Pair = tuple[int, int]


@dataclass(frozen=True)
class OpContext:
    """What an op builder reads: the graph, the op, and the model's weights it adds to."""
    g: GraphRecord
    op: OpRecord
    weights: dict

    def refuse(self, what: str):
        return refuse_op(self.g.path, self.op, what)

    def tensor(self, k: int) -> TensorRecord | None:
        """Input k (None when absent)."""
        i = self.op.inputs[k] if k < len(self.op.inputs) else -1
        return None if i < 0 else self.g.tensors[i]

    @property
    def out(self) -> TensorRecord:
        return self.g.tensors[self.op.outputs[0]]

    @property
    def options(self) -> dict:
        return self.op.options

    def constant(self, k: int, prefix: str, dtype: str) -> str:
        """Input k as the weight <prefix><op index>; refused unless a constant of `dtype`."""
        t = self.tensor(k)
        if t.data is None:
            raise self.refuse(f"input {k} (tensor {t.index}) is computed, not a constant")
        if t.type != dtype:
            raise self.refuse(f"input {k} (tensor {t.index}) is {t.type}, expected {dtype}")
        name = f"{prefix}{self.op.index}"
        self.weights[name] = np.ascontiguousarray(t.data)
        return name

    def layer(self, x: TensorRecord, weights: tuple[str, ...], block, run, inputs=None) -> Layer:
        return Layer(self.op.index, self.op.name, inputs or (x.index,), self.out.index, weights, block, run)


def filter_and_bias(c: OpContext, dtype: str, bias_dtype: str, out_axis: int) -> tuple[TensorRecord, tuple[str, ...]]:
    """The filter (input 1) and the optional bias (input 2) as weights: (filter, their names)."""
    w = c.tensor(1)
    if w is None:
        raise c.refuse("has no filter")
    rank = 2 if c.op.name == "FULLY_CONNECTED" else 4  # [out, in]; OHWI, or [1, H, W, C * multiplier]
    if len(w.shape) != rank:
        raise c.refuse(f"filter {w.shape} is not {rank}-D")
    names = [c.constant(1, "w", dtype)]
    b = c.tensor(2)
    if b is not None:
        names.append(c.constant(2, "b", bias_dtype))
        if b.shape != (w.shape[out_axis],):
            raise c.refuse(f"bias shape {b.shape} does not match the filter {w.shape}")
    return w, tuple(names)


def nhwc(c: OpContext, x: TensorRecord) -> None:
    if len(x.shape) != 4:
        raise c.refuse(f"input {x.shape} is not NHWC")


def nhwc_out(c: OpContext, x: TensorRecord, channels: int, source: str) -> None:
    """The output is NHWC, of the input's batch and of the channels `source` makes (padding()
    checks its height and width): a file whose output shape disagrees is refused, not trusted."""
    o = c.out.shape
    if len(o) != 4 or o[0] != x.shape[0]:
        raise c.refuse(f"output {o} is not NHWC of the input's batch {x.shape[0]}")
    if o[3] != channels:
        raise c.refuse(f"output {o} has {o[3]} channels; {source} makes {channels}")


def stride_dilation(c: OpContext) -> tuple[Pair, Pair]:
    o = c.options
    return (o["strideH"], o["strideW"]), (o["dilationHFactor"], o["dilationWFactor"])


def pool_window(c: OpContext) -> tuple[Pair, Pair]:
    """(stride, window) of a pool."""
    o = c.options
    return (o["strideH"], o["strideW"]), (o["filterHeight"], o["filterWidth"])


def padding(c: OpContext, in_hw, k_hw, stride: Pair, dilation: Pair, out_hw) -> tuple[Pair, Pair]:
    """TFLite's padding ((top, bottom), (left, right)) for SAME/VALID: the odd pixel at the end
    (ComputePaddingHeightWidth); the output size must be what the padding gives."""
    kind = PADDING_NAMES.get(c.options["padding"], str(c.options["padding"]))
    if kind not in ("SAME", "VALID"):
        raise c.refuse(f"padding {kind} is not supported")
    if min(stride) < 1 or min(dilation) < 1:
        raise c.refuse(f"stride {stride} / dilation {dilation} must be >= 1")
    pads = []
    for size, k, s, d, out in zip(in_hw, k_hw, stride, dilation, out_hw):
        eff = (k - 1) * d + 1
        want = (size + s - 1) // s if kind == "SAME" else (size - eff + s) // s
        if out != want:
            raise c.refuse(f"output size {tuple(out_hw)} does not match {kind} padding (expected {want})")
        total = max((out - 1) * s + eff - size, 0)
        pads.append((total // 2, total - total // 2))
    return pads[0], pads[1]


def transpose_conv_inputs(c: OpContext, x: TensorRecord, dtype: str, bias_dtype: str
                          ) -> tuple[TensorRecord, tuple[str, ...], Pair, Pair]:
    """TRANSPOSE_CONV's inputs (output shape, OHWI filter, input, optional bias): (filter, the
    weights' names, stride, padding (h, w)). TFLite's reference spreads each input pixel over
    the output, out_y = in_y * stride - pad + ky, the padding the one a convolution from the
    output's size to the input's would have (ComputePaddingHeightWidth; the odd pixel's offset is
    not used)."""
    nhwc(c, x)
    w = c.tensor(1)
    if w is None or len(w.shape) != 4:
        raise c.refuse("has no 4-D filter")
    if w.shape[3] != x.shape[3]:
        raise c.refuse(f"filter {w.shape} does not take the input's {x.shape[3]} channels")
    shape = c.tensor(0)
    if shape is None or shape.data is None or tuple(np.asarray(shape.data).ravel()) != tuple(c.out.shape):
        raise c.refuse(f"output shape input {None if shape is None else shape.data} is not a constant "
                       f"equal to the output tensor's {c.out.shape}")
    nhwc_out(c, x, w.shape[0], f"the filter {w.shape}")
    names = [c.constant(1, "w", dtype)]
    b = c.tensor(3)
    if b is not None:
        if b.shape != (w.shape[0],):
            raise c.refuse(f"bias shape {b.shape} does not match the filter {w.shape}")
        names.append(c.constant(3, "b", bias_dtype))
    stride = (c.options["strideH"], c.options["strideW"])
    if min(stride) < 1:
        raise c.refuse(f"stride {stride} must be >= 1")
    kind = PADDING_NAMES.get(c.options["padding"], str(c.options["padding"]))
    if kind not in ("SAME", "VALID"):
        raise c.refuse(f"padding {kind} is not supported")
    pads = []
    for out, k, s in zip(c.out.shape[1:3], w.shape[1:3], stride):
        conv_out = (out + s - 1) // s if kind == "SAME" else (out - k + s) // s
        pads.append(max((conv_out - 1) * s + k - out, 0) // 2)
    return w, tuple(names), stride, (pads[0], pads[1])


def check_dense_options(c: OpContext) -> None:
    if c.options["weightsFormat"] != 0:
        raise c.refuse(f"weights format {c.options['weightsFormat']} (only DEFAULT is supported)")


def second_input(c: OpContext, x: TensorRecord) -> TensorRecord:
    """ADD's other operand: computed, of the first's type and shape (no broadcasting)."""
    y = c.tensor(1)
    if y is None or y.data is not None or y.type != x.type:
        raise c.refuse(f"second input must be a computed {x.type} tensor")
    if not (x.shape == y.shape == c.out.shape):
        raise c.refuse(f"broadcasting {x.shape} + {y.shape} is not supported")
    return y


def broadcast_operands(c: OpContext, x: TensorRecord) -> tuple[TensorRecord, TensorRecord]:
    """MUL's operands, the one of the output's shape first (the product is the same either
    way): the other of its type, broadcasting to it as numpy and TFLite do -- computed, or a
    constant second input (a per-channel scale), which stays second and becomes a weight."""
    y = c.tensor(1)
    if y is None or y.type != x.type:
        raise c.refuse(f"second input must be a {x.type} tensor")
    out = tuple(c.out.shape)
    try:
        fits = tuple(np.broadcast_shapes(x.shape, y.shape)) == out
    except ValueError:
        fits = False
    if not fits or out not in (tuple(x.shape), tuple(y.shape)) or (y.data is not None and tuple(x.shape) != out):
        raise c.refuse(f"{list(x.shape)} * {list(y.shape)} does not broadcast one input to the other's shape, the "
                       f"output's{' (a constant: the second input)' if y.data is not None else ''} {list(out)}")
    return (x, y) if tuple(x.shape) == out else (y, x)


def reshape(c: OpContext, x: TensorRecord) -> Layer:
    """RESHAPE to its output tensor's shape (the file's shape input or option agrees with it)."""
    if c.out.type != x.type or int(np.prod(c.out.shape)) != int(np.prod(x.shape)):
        raise c.refuse(f"{x.type}{list(x.shape)} cannot become {c.out.type}{list(c.out.shape)}")
    shape = c.out.shape
    return c.layer(x, (), None, lambda a: a.reshape(shape))


def mean_axes(c: OpContext, x: TensorRecord) -> tuple[tuple[int, ...], bool]:
    """MEAN's constant axes (input 1; negative from the end) and keep_dims, the output shape
    checked against them."""
    t = c.tensor(1)
    if t is None or t.data is None or t.type != "INT32":
        raise c.refuse("the axes (input 1) must be a constant INT32 tensor")
    rank = len(x.shape)
    axes = [int(a) for a in np.asarray(t.data).ravel()]
    if not axes or any(not -rank <= a < rank for a in axes):
        raise c.refuse(f"axes {axes} are not dimensions of the input {list(x.shape)}")
    keep = bool(c.options["keepDims"])
    resolved = {a % rank for a in axes}
    want = [1 if d in resolved else n for d, n in enumerate(x.shape) if keep or d not in resolved]
    if list(c.out.shape) != want:
        raise c.refuse(f"output {list(c.out.shape)} is not the mean over axes {axes} {want}")
    return tuple(axes), keep
