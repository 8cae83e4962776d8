"""layers.json: the layers of a captured model, for models whose layers capture knows.

A `.tflite` model's layers are its operators (importers/tflite.py runs each inside the named
scope `layer<op>.<OP>`); a model made by `specializer.quant.quantize()` has its int8 blocks as
layers (each inside `layer<k>.<kind>`). That scope is in the `op_name` of every HLO instruction
the layer becomes, XLA's own kernels and CMSIS-NN calls alike (hlo.json): how the per-layer
profile (`specialize layers`) finds a layer's code.

Per layer: op, name, the scope, input and output shapes and dtypes, MACs (conv: output values
x KH x KW x Cin; depthwise: output values x KH x KW; dense: output values x inputs), weight
bytes (the layer's constant arrays as the model holds them: int8 weights + int32 bias, float32
for float), activation bytes (its activation inputs + its output). For a .tflite model also the
file and TFLite Micro's arena for it; for a quantize() model each layer's SNR against the float
model (quant/layererror.py).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

FILE_NAME = "layers.json"
SCHEMA = 1


@dataclass(frozen=True)
class Tensor:
    shape: tuple[int, ...]
    dtype: str

    @property
    def bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class Layer:
    index: int  # the operator's index in the graph (tflite), the block's in the model (quantize)
    op: str  # CONV_2D, ... (tflite); conv, depthwise, dense, ... (quantize)
    name: str  # the output tensor's name (tflite), else the scope
    scope: str  # the named scope in its HLO op_name
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    macs: int
    weight_bytes: int
    activation_bytes: int
    snr_db: float | None = None  # quantize(): the output's SNR against the float model (None: not known)


@dataclass(frozen=True)
class Layers:
    kind: str  # "tflite" | "quantize"
    source: str  # the model file
    layers: tuple[Layer, ...]
    tflite_micro_arena: int | None = None  # tflite: TFLite Micro's arena bytes for the same file (host)
    notes: tuple[str, ...] = field(default=())  # how the figures were made, what is missing

    def dumps(self) -> str:
        return json.dumps({"schema": SCHEMA, **asdict(self)}, indent=1) + "\n"


def loads(text: str) -> Layers:
    d = json.loads(text)
    d.pop("schema", None)

    def tensors(ts):
        return tuple(Tensor(tuple(t["shape"]), t["dtype"]) for t in ts)

    layers = tuple(Layer(**(x | {"inputs": tensors(x["inputs"]), "outputs": tensors(x["outputs"])}))
                   for x in d.pop("layers"))
    return Layers(layers=layers, **(d | {"notes": tuple(d.get("notes", ()))}))


def load(path: Path) -> Layers | None:
    """layers.json beside a model.ll (None when capture wrote none: layers unknown)."""
    path = Path(path)
    return loads(path.read_text()) if path.is_file() else None


def macs(op: str, filter_shape: tuple[int, ...] | None, out: Tensor) -> int:
    """MACs of a conv / depthwise / dense layer from its filter (TFLite's layouts: conv OHWI,
    depthwise 1HWC, dense [out, in]) and output; 0 for anything else."""
    n = int(np.prod(out.shape, dtype=np.int64))
    if filter_shape is None:
        return 0
    if op in ("CONV_2D", "conv"):
        return n * int(np.prod(filter_shape[1:]))
    if op in ("DEPTHWISE_CONV_2D", "depthwise"):
        return n * filter_shape[1] * filter_shape[2]
    if op in ("FULLY_CONNECTED", "dense"):
        return n * filter_shape[1]
    return 0


_DTYPES = {"INT8": "int8", "FLOAT32": "float32", "INT32": "int32"}


def _filter_shape(block) -> tuple[int, ...] | None:
    """An int8 block's filter shape in TFLite's layout (conv OHWI, depthwise 1HWC, dense [out,
    in]): its weight's own shape is not it when int4 weights are stored packed (1-D)."""
    if hasattr(block, "filter_dims"):
        return tuple(block.filter_dims)
    if hasattr(block, "out_features"):
        return (block.out_features, block.in_features)
    return None


def of_tflite(model, arena: int | None) -> Layers:
    """The operators of a TfliteModel (importers/tflite.py) as layers."""
    from specializer.importers.tflite import scope
    from specializer.importers.tflite_file import read_graph

    g = read_graph(Path(model.path))

    def tensor(i: int) -> Tensor:
        t = g.tensors[i]
        return Tensor(tuple(int(d) for d in t.shape), _DTYPES.get(t.type, t.type.lower()))

    out = []
    for layer in model.layers:
        ins = tuple(tensor(i) for i in layer.inputs)
        o = tensor(layer.output)
        ws = [np.asarray(model.weights[n]) for n in layer.weights]
        filt = None
        if ws and layer.name in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            filt = _filter_shape(layer.block) or tuple(ws[0].shape)  # a float model's layers have no block
        n_macs = layer.block.macs() if hasattr(layer.block, "macs") else macs(layer.name, filt, o)  # int8 TRANSPOSE_CONV
        out.append(Layer(layer.op, layer.name, g.tensors[layer.output].name, scope(layer), ins, (o,),
                         n_macs, sum(w.nbytes for w in ws),
                         sum(t.bytes for t in ins) + o.bytes))
    return Layers("tflite", str(Path(model.path).resolve()), tuple(out), arena)


def of_quantized(model, inputs: dict, params: dict, source: str, vals: list | None = None) -> Layers:
    """The int8 blocks of a quantize() model as layers, each with its SNR against the float
    model on `inputs` (the model's int8 example inputs, dequantized for the float model); `vals`:
    its layererror.int8_values on them, if the caller has them already."""
    from specializer.quant import layererror

    if vals is None:
        vals = layererror.int8_values(model, inputs, params)
    shapes = layererror.step_tensors(model, vals)
    snrs = layererror.snr_db(model, inputs, vals)
    out = []
    for k, (s, (ins, o)) in enumerate(zip(model.steps, shapes)):
        ins = tuple(Tensor(tuple(t.shape), str(t.dtype)) for t in ins)
        o = Tensor(tuple(o.shape), str(o.dtype))
        ws = [np.asarray(params[n]) for n in (s.weight, s.bias, *s.arrays) if n]  # arrays: an LSTM's twelve
        filt = _filter_shape(s.block) if s.kind in ("conv", "depthwise", "dense") and ws else None
        n_macs = s.block.macs() if hasattr(s.block, "macs") else macs(s.kind, filt, o)  # tconv: its own count
        out.append(Layer(k, s.kind, model.scope(k), model.scope(k), ins, (o,), n_macs,
                         sum(w.nbytes for w in ws), sum(t.bytes for t in ins) + o.bytes, snrs[k]))
    notes = ("snr_db: each int8 block's output dequantized, against the float model's same layer, both on the "
             "example input (the float model gets it dequantized); null where the float layer is all zero",)
    return Layers("quantize", source, tuple(out), None, notes)
