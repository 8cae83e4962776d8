"""A model from another format (.tflite, .onnx) in capture: read in the parent, called in the
worker, and checked against its own format's reference interpreter, which gives model.json's
outputs. The format is chosen by the file's suffix (FORMATS: reader, oracle, version).

    model = read(path, every_layer)         # parent: an unsupported op is the reader's one line,
                                            # before the worker starts or anything is written
    xss = example_inputs(model, npy, n)     # --input FILE.npy (one or a stack) or n examples
    fn = worker_function(path, inputs_npz, every_layer)  # worker: the reader's fn on xss[0]
    manifest, log = with_oracle(model, manifest, xss[1:])  # the oracle's outputs, once JAX's
                                            # equal them; the other inputs as vectors with its outputs

The oracle is the format's own reference interpreter, not our own JAX blocks: TFLite Micro's
(the `tflite-micro` package: its reference kernels, built for the host) for .tflite,
onnx.reference's ReferenceEvaluator for .onnx. QEMU's outputs are then checked against it in
every variant, and a block written from CMSIS-NN's documentation that drifts from what the
format computes is refused at capture, not reported as a pass. With every_layer (.tflite) the
model's outputs are every operator's output (TFLite Micro reads a copy of the file whose outputs
are those tensors): a saturated final layer cannot hide a wrong one inside.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from specializer.capture.manifest import Manifest, Vector, flat
from specializer.errors import UserError

# host memory for TFLite Micro's arena: the largest MLPerf Tiny model needs about 0.5 MB; its own
# default (10x the file) is too small for a small model with large activations
ARENA_BYTES = 16 << 20
# float models: TFLite's kernels and XLA's sum in different orders
FLOAT_RTOL = 1e-4


def read_tflite(path: Path, every_layer: bool = False):
    from specializer.importers.tflite import read_tflite

    return read_tflite(path, every_layer)


def read_onnx(path: Path, every_layer: bool = False):
    from specializer.importers.onnx_model import read_onnx

    if every_layer:
        raise UserError(f"--every-layer: for a .tflite model; {Path(path).name}'s layers are in NHWC inside, "
                        "its values in the file's layout (a QDQ model's layers are checked against "
                        "onnx.reference one by one at capture)")
    return read_onnx(path)


def run_onnx_reference(model, xss) -> list[list[np.ndarray]]:
    """onnx.reference's (ReferenceEvaluator's) outputs for each input tuple."""
    from specializer.importers.onnx_model import reference_outputs

    return [reference_outputs(model.path, xs) for xs in xss]


def _tflite_version() -> tuple[str, str]:
    import tflite_micro

    return "tflite_micro", getattr(tflite_micro, "__version__", "?")


def _onnx_version() -> tuple[str, str]:
    import onnx

    return "onnx", onnx.__version__


@dataclass(frozen=True)
class Format:
    reader: Callable          # path -> model (graph_model.ImportedModel)
    oracle: str               # the reference interpreter, as messages name it
    run: str                  # the name of this module's function running it: (model, xs) -> outputs
    version: Callable         # () -> (model.json's versions key, version)
    # for a model of int8 blocks whose oracle rounds otherwise (ONNX QDQ): the name of this
    # module's function (model, xs, outputs) -> (log lines); model.json then keeps JAX's outputs
    int8_rule: str | None = None
    # model -> its layers.json (capture/layers.py), for a format whose layers capture knows
    layers: Callable | None = None


def _tflite_layers(model):
    from specializer.capture import layers

    return layers.of_tflite(model, tflite_micro_arena(model))


FORMATS = {
    ".tflite": Format(read_tflite, "TFLite Micro", "run_tflite_micro", _tflite_version, layers=_tflite_layers),
    ".onnx": Format(read_onnx, "onnx.reference", "run_onnx_reference", _onnx_version, "onnx_qdq_rule"),
}

# The QDQ rule (docs/int8.md, "ONNX QDQ models"): every int8 layer, run on onnx.reference's own
# input tensors, gives onnx.reference's int8 output or one off (CMSIS-NN's fixed-point
# requantization and its pools' rounding against onnx.reference's float32 and half to even)
QDQ_LAYER_TOLERANCE = 1


def onnx_qdq_rule(model, xs, got: list[np.ndarray], want: list[np.ndarray]) -> list[str]:
    """The QDQ rule checked (UserError naming the first layer that breaks it); capture.log's lines:
    each layer's differences, and the outputs' against onnx.reference's."""
    from specializer.importers.onnx_model import layerwise

    lines = []
    for name, n, size, largest in layerwise(model, xs):
        if largest > QDQ_LAYER_TOLERANCE:
            raise UserError(f"capture of {model.path.name}: int8 layer {name} differs from onnx.reference's by "
                            f"{largest} at {n} of {size} values on onnx.reference's own inputs (the QDQ rule "
                            f"allows {QDQ_LAYER_TOLERANCE})")
        lines.append(f"onnx.reference, layer by layer: {name}: {n} of {size} int8 values differ by 1")
    for spec, g, w in zip(model.outputs, got, want):
        g, w = np.asarray(g), np.asarray(w)
        if spec.quant is not None and g.dtype.kind == "f":  # a dequantized output: in int8 steps
            d = np.abs(g.astype(np.float64) - w.astype(np.float64)) / spec.quant.scale
        else:
            d = np.abs(g.astype(np.float64) - w.astype(np.float64))
        lines.append(f"onnx.reference, end to end: output '{spec.name}': {int((d > 0.5).sum())} of {d.size} values "
                     f"differ, by at most {int(np.rint(d.max(initial=0)))} int8 steps; model.json keeps JAX's "
                     "(CMSIS-NN's integer arithmetic: the QDQ rule)")
    return lines


def format_of(path: Path) -> Format | None:
    return FORMATS.get(Path(path).suffix.lower())


def is_model_file(path: Path) -> bool:
    return format_of(path) is not None


def layers_of(model):
    """The model's layers.json (capture/layers.py's Layers), None for a format that has none yet (.onnx)."""
    fmt = format_of(model.path)
    return fmt.layers(model) if fmt.layers is not None else None


def read(path: Path, every_layer: bool = False):
    return format_of(path).reader(path, every_layer)


def example_inputs(model, npy: Path | None, n: int = 1) -> list[tuple[np.ndarray, ...]]:
    """The inputs capture checks the model on, one tuple each; the first is the one measured:
    `npy` (the model's one input: its shape and dtype exactly, or a stack of them), else n of
    the reader's deterministic examples."""
    if npy is None:
        return model.examples(n)
    npy = Path(npy)
    if len(model.inputs) != 1:
        raise UserError(f"--input {npy}: {model.path.name} has {len(model.inputs)} inputs; "
                        "--input gives one array")
    try:
        x = np.load(npy, allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"--input {npy}: no such file") from None
    except (OSError, ValueError) as e:
        first = next((ln for ln in str(e).splitlines() if ln.strip()), type(e).__name__)
        raise UserError(f"--input {npy}: not a .npy array ({first})") from None
    if not isinstance(x, np.ndarray):  # an .npz archive
        x.close()
        raise UserError(f"--input {npy}: not a .npy array (an .npz archive)")
    spec = model.inputs[0]
    stacked = x.ndim == len(spec.shape) + 1 and x.shape[1:] == spec.shape and len(x) > 0
    if not (x.shape == spec.shape or stacked) or x.dtype != np.dtype(spec.dtype):
        raise UserError(f"--input {npy}: {x.dtype}{list(x.shape)}, but {model.path.name}'s input "
                        f"'{spec.name}' is {spec.dtype}{list(spec.shape)} (or a stack of them, "
                        f"{spec.dtype}[N, {', '.join(map(str, spec.shape))}])")
    return [(xi,) for xi in x] if stacked else [(x,)]


def save_inputs(model, xs: tuple[np.ndarray, ...], path: Path) -> None:
    """For the worker, by the names the function's parameters have."""
    np.savez(path, **dict(zip(model.input_names, xs)))


def worker_function(path: Path, inputs: Path | None, every_layer: bool = False):
    """The function capture's worker traces; its example inputs from `inputs` (save_inputs)
    when the parent was given some."""
    fn = read(path, every_layer).fn
    if inputs is not None:
        with np.load(inputs) as given:
            fn.example_inputs = {name: given[name] for name in given.files}
    return fn


def run_tflite_micro(model, xss) -> list[list[np.ndarray]]:
    """TFLite Micro's outputs (the model's: every layer's with every_layer) for each input tuple."""
    from tflite_micro.python.tflite_micro import runtime

    from specializer.importers.tflite import tflite_bytes

    with _quiet() as log:
        try:
            it = runtime.Interpreter.from_bytes(tflite_bytes(model), arena_size=ARENA_BYTES)
            outs = []
            for xs in xss:
                it.reset()  # variable tensors (SVDF's state) back to their start: one call each
                for i, x in enumerate(xs):
                    it.set_input(np.asarray(x), i)
                it.invoke()
                outs.append([np.array(it.get_output(i)) for i in range(len(model.outputs))])
            return outs
        except RuntimeError as e:  # what the interpreter logged says why; the exception does not
            said = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
            why = said[0] if said else (str(e).strip().splitlines() or ["no reason given"])[0]
    raise UserError(f"{model.path.name}: TFLite Micro's interpreter cannot run it ({why})")


def tflite_micro_arena(model) -> int | None:
    """The bytes TFLite Micro's interpreter allocated from its arena for the model on this host
    (its allocation report's total: the activations' plan and its own structures), None when the
    report says nothing."""
    from tflite_micro.python.tflite_micro import runtime

    from specializer.importers.tflite import tflite_bytes

    with _quiet() as log:
        it = runtime.Interpreter.from_bytes(tflite_bytes(model), arena_size=ARENA_BYTES)
        for i, x in enumerate(model.example_inputs):
            it.set_input(np.asarray(x), i)
        it.invoke()
        it.print_allocations()
        text = log.read_text(errors="replace")
    m = re.search(r"Arena allocation total (\d+) bytes", text)
    return int(m.group(1)) if m else None


@contextlib.contextmanager
def _quiet():
    """stdout and stderr of TFLite Micro's C++ (its arena report, its errors) into a file, whose
    path the block gets: a capture prints only its own lines."""
    with tempfile.TemporaryDirectory(prefix="specializer-tflm-") as tmp:
        log = Path(tmp) / "tflm.log"
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        try:
            with open(log, "wb") as f:
                os.dup2(f.fileno(), 1)
                os.dup2(f.fileno(), 2)
                try:
                    yield log
                finally:
                    os.dup2(saved[0], 1)
                    os.dup2(saved[1], 2)
        finally:
            for fd in saved:
                os.close(fd)


def difference(name: str, got: np.ndarray, want: np.ndarray, oracle: str = "TFLite Micro",
               exact: bool = False) -> str | None:
    """None when JAX's output `got` is the oracle's `want` (int8, or `exact`: equal; float:
    within FLOAT_RTOL of the output's largest magnitude), else what differs, in a phrase."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{name} is {got.dtype}{list(got.shape)} in JAX, {want.dtype}{list(want.shape)} in {oracle}"
    if want.dtype.kind == "f" and not exact:
        tol = FLOAT_RTOL * max(float(np.abs(want).max(initial=0.0)), np.finfo(np.float32).tiny)
        off = ~np.isclose(got, want, rtol=FLOAT_RTOL, atol=tol, equal_nan=True)
    else:
        off = ~((got == want) | (np.isnan(got) & np.isnan(want))) if want.dtype.kind == "f" else got != want
    if not off.any():
        return None
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    at = np.unravel_index(int(np.argmax(np.where(off, diff, -1))), got.shape)
    return (f"{name} differs from {oracle}'s at {int(off.sum())} of {off.size} values (largest at "
            f"{tuple(int(i) for i in at)}: JAX {got[at]}, {oracle} {want[at]}, difference {diff[at]:g})")


def with_oracle(model, manifest: Manifest, more: list[tuple[np.ndarray, ...]] = ()) -> tuple[Manifest, list[str]]:
    """`manifest` with the oracle's outputs as the reference, once JAX's run (the outputs
    capture wrote) equals them; UserError naming the first output that does not. A float output
    dequantized from int8 must be equal too. `more` inputs become vectors with the oracle's
    outputs. A model of int8 blocks whose format has an int8 rule (ONNX QDQ) is checked by that
    rule instead, on every input, and keeps JAX's outputs (the vectors' from the reader's
    function run here). Also capture.log's lines."""
    fmt = format_of(model.path)
    xs = tuple(t.array() for t in manifest.inputs)
    want, *others = globals()[fmt.run](model, [xs, *more])
    key, version = fmt.version()
    versions = {**manifest.versions, key: version}
    if fmt.int8_rule is not None and any(layer.block is not None for layer in model.layers):
        import jax

        from specializer.quant import blocks

        rule = globals()[fmt.int8_rule]
        run = jax.jit(lambda *x: model(*x))
        vectors = []
        with blocks.values_only():  # their values are all these runs give (blocks.py)
            lines = rule(model, xs, [t.array() for t in manifest.outputs], want)
            for xk, wk in zip(more, others):
                got = run(*xk)
                got = [np.asarray(g) for g in (got if isinstance(got, tuple) else (got,))]
                rule(model, xk, got, wk)
                vectors.append(Vector(tuple(flat(x) for x in xk), tuple(flat(g) for g in got)))
        return replace(manifest, vectors=tuple(vectors),
                       versions={**versions, "reference": "jax (int8 blocks; " + fmt.oracle +
                                 " checked by the QDQ rule)"}), lines
    outputs = []
    for t, spec, w in zip(manifest.outputs, model.outputs, want):
        why = difference(t.name, t.array(), np.asarray(w), fmt.oracle, exact=spec.quant is not None)
        if why is not None:
            raise UserError(f"capture of {model.path.name}: JAX's output {why}")
        outputs.append(replace(t, data=flat(w)))
    vectors = tuple(Vector(tuple(flat(x) for x in xk), tuple(flat(y) for y in yk)) for xk, yk in zip(more, others))
    return replace(manifest, outputs=tuple(outputs), versions=versions, vectors=vectors), []
