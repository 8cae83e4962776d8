"""A model from another format (.tflite) in capture: read in the parent, called in the worker,
and checked against its own format's reference interpreter, which gives model.json's outputs.

    model = read(path)                      # parent: an unsupported op is the reader's one line,
                                            # before the worker starts or anything is written
    xs = example_inputs(model, npy)         # --input FILE.npy, checked against the model's input
    fn = worker_function(path, inputs_npz)  # worker: read_tflite(path).fn on those inputs
    manifest = with_oracle(model, manifest) # TFLite Micro's outputs, once JAX's equal them

The oracle is TFLite Micro's interpreter (the `tflite-micro` package: its reference kernels,
built for the host), not our own JAX blocks: QEMU's outputs are then checked against TFLite's
kernels in every variant, and a block written from CMSIS-NN's documentation that drifts from
what TFLite computes is refused at capture, not reported as a pass.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from specializer.capture.manifest import Manifest, flat
from specializer.errors import UserError

SUFFIXES = (".tflite",)
# host memory for TFLite Micro's arena: the largest MLPerf Tiny model needs about 0.5 MB; its own
# default (10x the file) is too small for a small model with large activations
ARENA_BYTES = 16 << 20
# float models: TFLite's kernels and XLA's sum in different orders
FLOAT_RTOL = 1e-4


def is_model_file(path: Path) -> bool:
    return Path(path).suffix.lower() in SUFFIXES


def read(path: Path):
    from specializer.importers.tflite import read_tflite

    return read_tflite(path)


def example_inputs(model, npy: Path | None) -> tuple[np.ndarray, ...]:
    """The arrays capture runs the model on: `npy` (one input, its shape and dtype exactly the
    model's), else the reader's deterministic example."""
    if npy is None:
        return tuple(model.example_inputs)
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
    if x.shape != spec.shape or x.dtype != np.dtype(spec.dtype):
        raise UserError(f"--input {npy}: {x.dtype}{list(x.shape)}, but {model.path.name}'s input "
                        f"'{spec.name}' is {spec.dtype}{list(spec.shape)}")
    return (x,)


def save_inputs(model, xs: tuple[np.ndarray, ...], path: Path) -> None:
    """For the worker, by the names the function's parameters have."""
    np.savez(path, **dict(zip(model.input_names, xs)))


def worker_function(path: Path, inputs: Path | None):
    """The function capture's worker traces; its example inputs from `inputs` (save_inputs)
    when the parent was given some."""
    fn = read(path).fn
    if inputs is not None:
        with np.load(inputs) as given:
            fn.example_inputs = {name: given[name] for name in given.files}
    return fn


def run_tflite_micro(model, xs) -> list[np.ndarray]:
    """TFLite Micro's outputs for inputs xs."""
    from tflite_micro.python.tflite_micro import runtime

    it = runtime.Interpreter.from_bytes(model.path.read_bytes(), arena_size=ARENA_BYTES)
    for i, x in enumerate(xs):
        it.set_input(np.asarray(x), i)
    it.invoke()
    return [np.asarray(it.get_output(i)) for i in range(len(model.outputs))]


def difference(name: str, got: np.ndarray, want: np.ndarray) -> str | None:
    """None when JAX's output `got` is TFLite Micro's `want` (int8: equal; float: within
    FLOAT_RTOL of the output's largest magnitude), else what differs, in a phrase."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{name} is {got.dtype}{list(got.shape)} in JAX, {want.dtype}{list(want.shape)} in TFLite Micro"
    if want.dtype.kind == "f":
        tol = FLOAT_RTOL * max(float(np.abs(want).max(initial=0.0)), np.finfo(np.float32).tiny)
        off = ~np.isclose(got, want, rtol=FLOAT_RTOL, atol=tol, equal_nan=True)
    else:
        off = got != want
    if not off.any():
        return None
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    at = np.unravel_index(int(np.argmax(np.where(off, diff, -1))), got.shape)
    return (f"{name} differs from TFLite Micro's at {int(off.sum())} of {off.size} values (largest at "
            f"{tuple(int(i) for i in at)}: JAX {got[at]}, TFLite Micro {want[at]}, difference {diff[at]:g})")


def with_oracle(model, manifest: Manifest) -> Manifest:
    """`manifest` with TFLite Micro's outputs as the reference, once JAX's run (the outputs
    capture wrote) equals them; UserError naming the first output that does not."""
    import tflite_micro

    xs = [t.array() for t in manifest.inputs]
    want = run_tflite_micro(model, xs)
    outputs = []
    for t, w in zip(manifest.outputs, want):
        why = difference(t.name, t.array(), w)
        if why is not None:
            raise UserError(f"capture of {model.path.name}: JAX's output {why}")
        outputs.append(replace(t, data=flat(w)))
    versions = {**manifest.versions, "tflite_micro": getattr(tflite_micro, "__version__", "?")}
    return replace(manifest, outputs=tuple(outputs), versions=versions)
