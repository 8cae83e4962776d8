"""A model from another format (.tflite) in capture: read in the parent, called in the worker,
and checked against its own format's reference interpreter, which gives model.json's outputs.

    model = read(path, every_layer)         # parent: an unsupported op is the reader's one line,
                                            # before the worker starts or anything is written
    xss = example_inputs(model, npy, n)     # --input FILE.npy (one or a stack) or n examples
    fn = worker_function(path, inputs_npz, every_layer)  # worker: the reader's fn on xss[0]
    manifest = with_oracle(model, manifest, xss[1:])  # TFLite Micro's outputs, once JAX's equal
                                            # them; the other inputs as vectors with its outputs

With every_layer the model's outputs are every operator's output (TFLite Micro reads a copy of the
file whose outputs are those tensors): a saturated final layer cannot hide a wrong one inside.

The oracle is TFLite Micro's interpreter (the `tflite-micro` package: its reference kernels,
built for the host), not our own JAX blocks: QEMU's outputs are then checked against TFLite's
kernels in every variant, and a block written from CMSIS-NN's documentation that drifts from
what TFLite computes is refused at capture, not reported as a pass.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from specializer.capture.manifest import Manifest, Vector, flat
from specializer.errors import UserError

SUFFIXES = (".tflite",)
# host memory for TFLite Micro's arena: the largest MLPerf Tiny model needs about 0.5 MB; its own
# default (10x the file) is too small for a small model with large activations
ARENA_BYTES = 16 << 20
# float models: TFLite's kernels and XLA's sum in different orders
FLOAT_RTOL = 1e-4


def is_model_file(path: Path) -> bool:
    return Path(path).suffix.lower() in SUFFIXES


def read(path: Path, every_layer: bool = False):
    from specializer.importers.tflite import read_tflite

    return read_tflite(path, every_layer)


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

    with _quiet() as log:
        try:
            it = runtime.Interpreter.from_bytes(model.file_bytes(), arena_size=ARENA_BYTES)
            outs = []
            for xs in xss:
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

    with _quiet() as log:
        it = runtime.Interpreter.from_bytes(model.file_bytes(), arena_size=ARENA_BYTES)
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


def with_oracle(model, manifest: Manifest, more: list[tuple[np.ndarray, ...]] = ()) -> Manifest:
    """`manifest` with TFLite Micro's outputs as the reference, once JAX's run (the outputs
    capture wrote) equals them (UserError naming the first output that does not); `more` inputs
    as vectors, their reference outputs TFLite Micro's."""
    import tflite_micro

    xs = tuple(t.array() for t in manifest.inputs)
    want, *others = run_tflite_micro(model, [xs, *more])
    outputs = []
    for t, w in zip(manifest.outputs, want):
        why = difference(t.name, t.array(), w)
        if why is not None:
            raise UserError(f"capture of {model.path.name}: JAX's output {why}")
        outputs.append(replace(t, data=flat(w)))
    versions = {**manifest.versions, "tflite_micro": getattr(tflite_micro, "__version__", "?")}
    vectors = tuple(Vector(tuple(flat(x) for x in xs), tuple(flat(y) for y in ys)) for xs, ys in zip(more, others))
    return replace(manifest, outputs=tuple(outputs), versions=versions, vectors=vectors)
