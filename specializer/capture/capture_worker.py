"""Child process of `capture`: runs JAX with XLA's dump flags on one visible CPU.

XLA reads XLA_FLAGS once, when the CPU backend starts, and splits kernels into as many
workgroups as there are CPUs at compile time; so capture always happens in a fresh process
whose environment and CPU affinity the parent sets. Writes into OUT:
  executable.bin  the serialized XLA:CPU executable (thunk sequence, buffer assignment)
  io.npz          example inputs, weights and JAX's reference outputs
  io.json         names, order and versions
  dump/           XLA's dump (ir-no-opt.ll per kernel, scheduled HLO, buffer assignment)
  cmsis_nn.json   with int8 blocks (specializer.quant): every block's parameters and the
                  blocks kept as XLA code (why); executable.bin and the last module of the
                  dump then come from a second trace in which each block CMSIS-NN can run is
                  one custom call (see specializer/quant/calls.py)
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import json
import shutil
import os
import sys
import traceback
from pathlib import Path

if "SPECIALIZER_CAPTURE_CPU" in os.environ:  # before JAX: XLA sizes its work to the CPUs it sees
    os.sched_setaffinity(0, {int(os.environ["SPECIALIZER_CAPTURE_CPU"])})


def _die_with_parent(parent: int | None = None) -> None:
    """End with the capture that started us: killed outright (a CI step's timeout sends SIGKILL),
    it cannot stop us, and a model's endless loop would run on. Linux's parent-death signal, a
    check that the parent did not die before it was set, and a deadline of our own. `parent`: the
    process that must be alive (default the capture's; a worker forked by warm.py: the zygote,
    which itself ends with the capture)."""
    if parent is None:
        parent = int(os.environ.get("SPECIALIZER_CAPTURE_PARENT", "0"))
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if parent and os.getppid() != parent:
            os._exit(1)
        deadline = float(os.environ.get("SPECIALIZER_CAPTURE_DEADLINE", "0"))
        if deadline > 0:  # the parent's timeout ends us first; this is for when it cannot
            signal.alarm(int(deadline) + 30)
    except (OSError, AttributeError):  # not Linux: the parent's timeout is all there is
        pass


_die_with_parent()

import numpy as np  # noqa: E402

from specializer.capture import imported  # noqa: E402  (JAX only when it reads a model)


def load_function(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"_specializer_model_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"error: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise SystemExit(f"error: {path} defines no function '{name}'")
    return fn


def _int8_blocks():
    """(params.registered, calls) if the model used specializer's int8 blocks, else None."""
    if "specializer.quant.params" not in sys.modules:
        return None
    from specializer.quant import calls, params
    return params.registered, calls


def main(argv: list[str]) -> None:
    path, name, out = Path(argv[0]), argv[1], Path(argv[2])
    given = Path(argv[3]) if len(argv) > 3 else None  # an imported model's --input
    import jax  # after the parent set XLA_FLAGS and the affinity

    # XLA dumps the IR capture reads only when it compiles: never an executable from a cache
    jax.config.update("jax_enable_compilation_cache", False)

    if imported.is_model_file(path):  # a .tflite or .onnx file: the reader's function, not a module's
        fn = imported.worker_function(path, given, os.environ.get("SPECIALIZER_EVERY_LAYER") == "1")
    else:
        fn = load_function(path, name)
    inputs = dict(getattr(fn, "example_inputs", {}) or {})
    weights = dict(getattr(fn, "weights", {}) or {})
    params = list(inspect.signature(fn).parameters)
    missing = [p for p in params if p not in inputs and p not in weights]
    extra = [k for k in list(inputs) + list(weights) if k not in params]
    if missing or extra:
        raise SystemExit(f"error: {name}: every parameter needs an example input or a weight "
                         f"(missing: {', '.join(missing) or '-'}; unknown: {', '.join(extra) or '-'})")
    args = [np.asarray(inputs[p] if p in inputs else weights[p]) for p in params]
    for p, a in zip(params, args):
        if a.dtype == object or a.dtype.kind in "USM":
            raise SystemExit(f"error: {name}: parameter '{p}' is not a numeric array ({a.dtype})")
    for p, a in zip(params, args):
        if a.dtype == np.float64 or a.dtype == np.int64:
            raise SystemExit(f"error: {name}: parameter '{p}' is {a.dtype}; use 32-bit types "
                             "(float32/int32), the Cortex-M4 target has no 64-bit floats")
    jitted = jax.jit(fn, keep_unused=True)  # keep parameter numbers equal to positions
    lower = os.environ.get("SPECIALIZER_LOWER_INT8", "1") == "1"
    # the int8 blocks' reference run in the form XLA compiles fast, when a later trace gives the IR
    int8 = sys.modules.get("specializer.quant.blocks")
    ptq = sys.modules.get("specializer.quant.ptq")
    quantized = ptq is not None and isinstance(fn, ptq.QuantizedModel) and int8 is not None and lower
    compiled, values = None, None
    with int8.values_only() if int8 is not None and lower else contextlib.nullcontext():
        if quantized:  # every step's value from one program: the outputs, and the layers' table below
            values = [np.asarray(v) for v in jax.jit(lambda *a: fn.values(*a), keep_unused=True)(*args)]
            results = [values[i] for i in fn._out_index]
        else:
            compiled = jitted.lower(*args).compile()
            results = jax.tree.leaves(compiled(*args))
    blocks = _int8_blocks()
    # a fresh callable below: JAX must trace again rather than reuse the first trace
    if blocks is not None and blocks[0]() and lower:
        registered, calls = blocks
        with calls.emit_calls():
            compiled = jax.jit(functools.partial(fn), keep_unused=True).lower(*args).compile()
        (out / "cmsis_nn.json").write_text(json.dumps({"blocks": registered(), "kept": calls.kept()},
                                                      indent=1, sort_keys=True))
    elif int8 is not None and lower and int8.dot_used():  # no block lowered: the IR is XLA's code of them
        compiled = jax.jit(functools.partial(fn), keep_unused=True).lower(*args).compile()
    if compiled is None:  # the model's own program, compiled last: the dump capture reads
        compiled = jitted.lower(*args).compile()
    exe = compiled.runtime_executable()
    try:
        (out / "executable.bin").write_bytes(exe.client.serialize_executable(exe))
    except Exception as e:  # e.g. sort: its comparator is not serializable; the parent says which op
        (out / "executable.error").write_text(str(e).splitlines()[0] if str(e) else type(e).__name__)
    arrays = {f"arg{i}": a for i, a in enumerate(args)}
    arrays.update({f"out{i}": np.asarray(r) for i, r in enumerate(results)})
    with _own_dump_aside(out):
        float64 = _float64_outputs(fn, args, results, path)
    if isinstance(float64, list):
        arrays.update({f"f64_out{i}": a for i, a in enumerate(float64)})
    # numpy's .npy format cannot name JAX's own types (bfloat16, float8_*): stored as raw
    # unsigned integers of the same width, the type recorded in io.json
    dtypes = {}
    for key, a in arrays.items():
        if a.dtype.type.__module__.startswith("ml_dtypes"):
            dtypes[key] = str(a.dtype)
            arrays[key] = a.view(f"u{a.dtype.itemsize}")
    np.savez(out / "io.npz", **arrays)
    meta = {
        "dtypes": dtypes,
        "function": name,
        "params": [{"name": p, "weight": p in weights} for p in params],
        "n_outputs": len(results),
        "versions": {"jax": jax.__version__, "jaxlib": __import__("jaxlib").__version__},
    }
    if isinstance(float64, str):
        meta["float64"] = float64  # why there is no float64 run
    (out / "io.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
    if ptq is not None and isinstance(fn, ptq.QuantizedModel):  # its blocks are the layers
        from specializer.capture import layers

        with _own_dump_aside(out), sys.modules["specializer.quant.blocks"].values_only():  # they compile too
            found = layers.of_quantized(fn, inputs, weights, f"{path.name}:{name}", values)
        (out / layers.FILE_NAME).write_text(found.dumps())


@contextlib.contextmanager
def _own_dump_aside(out: Path):
    """XLA dumps every compile into out/dump, which the parent reads as the model's: compiles of
    other runs (float64, per-layer) go into a dump of their own, thrown away."""
    dump, aside = out / "dump", out / "dump.capture"
    if dump.exists():
        dump.rename(aside)
    try:
        yield
    finally:
        shutil.rmtree(dump, ignore_errors=True)
        if aside.exists():
            aside.rename(dump)


def _float64_outputs(fn, args: list, results: list, path: Path) -> list | str | None:
    """The outputs in float64 (float64_run.py) for a model of float32 outputs written in JAX; a
    phrase when it cannot run; None where it does not apply (integer outputs, or an imported
    model, whose reference is its format's interpreter)."""
    if imported.is_model_file(path) or not any(np.asarray(r).dtype == np.float32 for r in results):
        return None
    from specializer.capture import float64_run

    try:
        outs = float64_run.run(fn, args)
    except float64_run.Unsupported as e:
        return str(e)
    except Exception as e:  # a primitive that refuses float64 operands: the default tolerance stands
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".strip()
    if len(outs) != len(results):
        return "the float64 run gave another number of outputs"
    return outs


def _user_frame(tb, model: Path) -> traceback.FrameSummary | None:
    """The innermost frame in the user's own code: the model file, else its directory."""
    frames = traceback.extract_tb(tb)
    for inside in (lambda f: Path(f).resolve() == model, lambda f: Path(f).resolve().is_relative_to(model.parent)):
        found = [f for f in frames if f.filename and not f.filename.startswith("<") and inside(f.filename)
                 and "site-packages" not in f.filename]
        if found:
            return found[-1]
    return None


def report(e: BaseException, model: Path) -> str:
    """One line for an exception in the user's model: file and line, type and message."""
    if isinstance(e, SyntaxError):
        where = f"{e.filename}:{e.lineno}" if e.filename else str(model)
        return f"error: {where}: SyntaxError: {e.msg}"
    message = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
    frame = _user_frame(e.__traceback__, model)
    where = f"{frame.filename}:{frame.lineno}: in {frame.name}: " if frame else ""
    return f"error: {where}{type(e).__name__}" + (f": {message}" if message else "")


def run_as_worker(argv: list[str], zygote: int = 0) -> int:
    """main, its error as one line on stderr; the exit code. `zygote`: the pid of warm.py's zygote
    this process is a fork of (it imported this module, pinned, with its own parent-death signal,
    before this capture), which must still be its parent once the signal is set."""
    if zygote:
        _die_with_parent(zygote)
    try:
        main(argv)
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 1
        return e.code or 0
    except BaseException as e:  # noqa: BLE001 - the parent turns this one line into the error
        print(report(e, Path(argv[0]).resolve()), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(run_as_worker(sys.argv[1:]))
