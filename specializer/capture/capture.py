"""capture: a JAX function -> one Cortex-M4 LLVM module (model.ll) + manifest (model.json).

Stages: run JAX under XLA's dump flags in a child process (capture_worker), decode the
executable's thunk sequence, lower it onto a static memory plan (memplan) and an entry
function (entry), and link XLA's kernels, normalized and retargeted, into one module.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from specializer.llvm import irtext, module
from specializer.capture import cmsis_calls, entry, fminmax, hlo_sites, intrinsics, libcalls, memplan, runtime_symbols, xla_executable as xe

from specializer.capture import cmsis_calls_act, cmsis_calls_lstm, cmsis_calls_svdf, imported, layers, tolerance, warm
from specializer.errors import UserError
from specializer.files import write_all
from specializer.capture.manifest import Manifest, Tensor, flat, np_dtype
from specializer.capture.normalize import normalize
from specializer.capture.retarget import retarget
from specializer.target import TARGET
from specializer.capture.thunks import Conditional, Copy, Kernel, LibCall, Scratch, Slice, While
from specializer.capture.xla_dump import Dump, entry_computation, read_dump

# No YNNPACK fusions: XLA then leaves convolutions and big dots as plain runtime thunks, which
# capture lowers onto libjit kernels (a YNN fusion hides the ops inside an opaque subgraph).
BASE_FLAGS = ["--xla_dump_hlo_as_text", "--xla_dump_large_constants",
              "--xla_cpu_experimental_ynn_fusion_type="]
# Lets XLA emit its dots as LLVM IR instead of leaving them to a runtime library call.
IR_DOT_FLAGS = ["--xla_cpu_multi_thread_eigen=false",
                "--xla_backend_extra_options=xla_force_enable_experimental_llvm_ir_gemm"]


@dataclass(frozen=True)
class Captured:
    model_ll: Path
    manifest_json: Path
    manifest: Manifest
    log: tuple[str, ...] = ()  # what capture decided (capture.log next to model.ll)


def _sanitize(name: str) -> str:
    return re.sub(r"\W", "_", name)


# The reference run is the user's JAX program: a loop that never ends must not hang capture.
DEFAULT_TIMEOUT = 600.0


def run_worker(source: Path, function: str, workdir: Path, xla_flags: list[str],
               timeout: float = DEFAULT_TIMEOUT, lower_int8: bool = True, inputs: Path | None = None,
               every_layer: bool = False) -> None:
    """`inputs`: an imported model's example inputs (imported.save_inputs), else its reader's;
    `every_layer`: an imported model's outputs are every operator's."""
    env = dict(os.environ)
    env["SPECIALIZER_LOWER_INT8"] = "1" if lower_int8 else "0"
    env["SPECIALIZER_EVERY_LAYER"] = "1" if every_layer else "0"
    env["XLA_FLAGS"] = " ".join([f"--xla_dump_to={workdir / 'dump'}", *BASE_FLAGS, *xla_flags])
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["JAX_TRACEBACK_FILTERING"] = "off"  # the worker reports the user's own frame itself
    # one visible CPU, so XLA emits every kernel as a single workgroup; the worker pins itself
    # before JAX starts (a preexec_fn is unsafe once JAX's threads run in this process)
    env["SPECIALIZER_CAPTURE_CPU"] = str(min(os.sched_getaffinity(0)))
    # the worker ends with us, and by itself a little after the timeout (capture_worker._die_with_parent)
    env["SPECIALIZER_CAPTURE_PARENT"] = str(os.getpid())
    env["SPECIALIZER_CAPTURE_DEADLINE"] = f"{timeout:g}"
    argv = [str(source), function, str(workdir), *([str(inputs)] if inputs else [])]
    late = UserError(f"capture of {source}:{function} did not finish within {timeout:g} s (JAX's reference "
                     "run of the function: a loop that never ends?); if it is only slow, raise --timeout")
    proc = warm.run(argv, env, workdir / "worker.stderr", timeout)  # a capture after the first: forked
    if proc is None:
        try:
            proc = subprocess.run([sys.executable, "-m", "specializer.capture.capture_worker", *argv],
                                  env=env, capture_output=True, text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            raise late from None
    elif proc.timed_out:
        raise late
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        errs = [ln for ln in lines if ln.startswith("error:")]
        msg = errs[-1][len("error:"):].strip() if errs else (lines[-1] if lines else "no output")
        raise UserError(f"capture of {source}:{function} failed: {msg}")


def _operand(s: xe.ShapedSlice) -> libcalls.Operand:
    shape = s.shape
    m2m = shape.minor_to_major if shape.minor_to_major is not None else tuple(reversed(range(len(shape.dims))))
    return libcalls.Operand(Slice(s.slice.allocation, s.slice.offset, s.slice.size), shape.dtype,
                            tuple(shape.dims), tuple(m2m))


def _hlo_dims(ins, key: str) -> tuple[int, ...]:
    m = re.search(r"\b" + key + r"=\{([\d,]*)\}", ins.attrs)
    return tuple(int(x) for x in m.group(1).split(",") if x) if m else ()


class _Lowering:
    """Executable thunks -> specializer.capture.thunks, refusing what has no lowering yet.

    Dots and convolutions go to libjit kernels; with `xla_dots`, the dots XLA emits as IR
    kernels stay XLA's (for comparing XLA's dot code with the library's)."""

    def __init__(self, dump: Dump, thunks: tuple, xla_dots: bool = False, blocks: dict | None = None):
        self.dump = dump
        self.blocks = blocks or {}  # int8 block scope -> its parameters (cmsis_nn.json)
        self.log: list[str] = []
        self.xla_dots = xla_dots
        self.instrs = {i.name: i for c in dump.hlo.values() for i in c.instructions}
        self.users: dict[str, int] = {}
        for c in dump.hlo.values():
            for i in c.instructions:
                for o in i.operands:
                    self.users[o] = self.users.get(o, 0) + 1
        self.kernels = {t.op_name: t for t in _walk(thunks) if isinstance(t, xe.KernelThunk)}
        self.int8_dots, self.dropped = {}, set()
        if not xla_dots:
            self.find_int8_dots()

    def s8_source(self, name: str) -> libcalls.Operand | None:
        """The int8 buffer behind `name` when `name` is a fusion that only widens s8 to s32
        (convert and bitcasts: the same elements in the same memory order)."""
        ins, k = self.instrs.get(name), self.kernels.get(name)
        if ins is None or ins.opcode != "fusion" or k is None or len(k.arguments) != 1:
            return None
        body = self.dump.hlo.get(ins.attr("calls"))
        if body is None:
            return None
        shapes = {i.name: i.shape for i in body.instructions}
        for i in body.instructions:
            if i.opcode == "parameter" and not i.shape.startswith("s8["):
                return None
            if i.opcode == "convert" and (not i.shape.startswith("s32[") or
                                          shapes[i.operands[0]].split("[", 1)[1] != i.shape.split("[", 1)[1]):
                return None  # a convert that also changed the layout would be a transpose
            if i.opcode not in ("parameter", "convert", "bitcast"):
                return None
        src = k.arguments[0].slice
        out = _operand(k.results[0])
        return libcalls.Operand(Slice(src.allocation, src.offset, src.size), "s8", out.dims, out.minor_to_major)

    def find_int8_dots(self) -> None:
        """s32 dots of two widened int8 operands run on the int8 buffers (CMSIS-NN's s8 kernels);
        a widening kernel whose only user is such a dot is then dropped."""
        for name, k in self.kernels.items():
            ins = self.instrs.get(name)
            if ins is None or ins.opcode != "dot" or len(ins.operands) != 2:
                continue
            srcs = [self.s8_source(o) for o in ins.operands]
            if None in srcs or _operand(k.results[0]).dtype != "s32":
                continue
            self.int8_dots[name] = tuple(srcs)
            self.dropped.update(o for o in ins.operands if self.users.get(o) == 1)

    def dot_kernel(self, t: xe.KernelThunk) -> LibCall | None:
        """An XLA IR kernel that is a lone HLO dot -> its libjit call (None: keep XLA's IR)."""
        ins = self.instrs.get(t.op_name)
        if self.xla_dots or ins is None or ins.opcode != "dot" or len(t.arguments) != 2 or len(t.results) != 1:
            return None
        dims = {k: _hlo_dims(ins, k + "_dims") for k in
                ("lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch")}
        lhs, rhs = self.int8_dots.get(t.op_name) or (_operand(a) for a in t.arguments)
        out = _operand(t.results[0])
        if (lhs.dtype, rhs.dtype, out.dtype) not in libcalls.DOT_KERNELS:
            return None  # e.g. an s32 dot of computed operands: XLA's own IR handles it
        return libcalls.lower_dot(t.op_name, lhs, rhs, out, dims)

    def cmsis_nn_call(self, t: xe.CustomCallThunk) -> LibCall:
        """An int8 block's custom call -> its CMSIS-NN call (NotLowerable if it does not line up)."""
        scope = t.backend_config
        p = self.blocks.get(scope)
        stateful = p is not None and p["op"] in cmsis_calls_svdf.OPS
        if p is None or CMSIS_NN_TARGET + p["op"] != t.target_name or len(t.results) != 1 + stateful:
            raise cmsis_calls.NotLowerable(f"custom call '{t.op_name}' ({t.target_name}, '{scope}') "
                                           "names no int8 block the model traced")
        args = [_operand(a) for a in t.arguments]
        if stateful:  # the output and the new state
            call = cmsis_calls_svdf.lower(scope, p, args, [_operand(r) for r in t.results])
        else:
            lower = (cmsis_calls_act.lower if p["op"] in cmsis_calls_act.OPS else
                     cmsis_calls_lstm.lower if p["op"] in cmsis_calls_lstm.OPS else cmsis_calls.lower)
            call = lower(scope, p, args, _operand(t.results[0]))
        note = f" ({call.note})" if call.note else ""
        self.log.append(f"lowered {scope} ({t.op_name}) onto {call.function}{note}")
        return call

    def unsupported(self, t: xe.Thunk) -> UserError:
        ins = self.instrs.get(t.op_name)
        what = f"{ins.opcode} {ins.shape}" if ins else t.kind
        if ins is not None and ins.opcode == "custom-call":
            what += f" (target {ins.attr('custom_call_target')})"
        return UserError(f"unsupported op: {t.kind} thunk for HLO instruction '{t.op_name}' ({what}): "
                         "no LLVM IR and no libjit kernel for it")

    @staticmethod
    def slice(s) -> Slice:
        return Slice(s.allocation, s.offset, s.size)

    def sequence(self, thunks) -> tuple:
        out = []
        for t in thunks:
            if isinstance(t, xe.KernelThunk):
                if t.op_name in self.dropped:
                    continue
                call = self.dot_kernel(t)
                if call is not None:
                    out.append(replace(call, op=t.op_name))
                    continue
                args = tuple(self.slice(a.slice) for a in t.arguments + t.results)
                out.append(Kernel(t.kernel_name, args, tuple(t.num_workgroups), op=t.op_name))
            elif isinstance(t, xe.DotThunk):
                out.append(replace(libcalls.lower_dot(t.op_name, _operand(t.lhs), _operand(t.rhs), _operand(t.out),
                                                      dict(t.dot_dimensions)), op=t.op_name))
            elif isinstance(t, xe.ConvolutionThunk):
                out.append(replace(libcalls.lower_conv(t.op_name, _operand(t.input), _operand(t.kernel),
                                                       _operand(t.output), dict(t.dimension_numbers), t.window,
                                                       t.feature_group_count or 1), op=t.op_name))
            elif isinstance(t, xe.CopyThunk):
                if t.src.shape and t.dst.shape and t.src.shape != t.dst.shape:
                    raise self.unsupported(t)  # a layout-changing copy is a transpose
                out.append(Copy(self.slice(t.src.slice), self.slice(t.dst.slice), op=t.op_name))
            elif isinstance(t, xe.WhileThunk):
                out.append(While(self.sequence(t.cond_sequence), self.slice(t.cond_buffer),
                                 self.sequence(t.body_sequence), t.trip_count))
            elif isinstance(t, xe.ConditionalThunk):
                s = t.branch_index_buffer
                is_pred = s.size == 1
                out.append(Conditional(self.slice(s), is_pred, tuple(self.sequence(b) for b in t.branches)))
            elif isinstance(t, xe.CallThunk):
                out.extend(self.sequence(t.called_sequence))
            elif isinstance(t, xe.CustomCallThunk) and t.target_name.startswith(CMSIS_NN_TARGET):
                out.append(replace(self.cmsis_nn_call(t), op=t.op_name))
            else:
                raise self.unsupported(t)
        return tuple(out)


CMSIS_NN_TARGET = "cmsis_nn."  # specializer.quant.calls.TARGET_PREFIX (not imported: that pulls in JAX)


def _walk(thunks):
    for t in thunks:
        yield t
        for _, seq in t.nested():
            yield from _walk(seq)


def _resolve_output(dump: Dump, exe: xe.Executable, comp, name: str, index: tuple[int, ...]) -> tuple[int, int, int]:
    """(allocation, offset, size) of `name{index}`, looking through tuples and calls."""
    try:
        alloc, v = exe.locate(name, index)
        return alloc, v.offset, v.size
    except KeyError:
        pass
    ins = comp.get(name)
    if ins.opcode == "tuple":
        return _resolve_output(dump, exe, comp, ins.operands[index[0]], index[1:])
    if ins.opcode == "get-tuple-element":
        return _resolve_output(dump, exe, comp, ins.operands[0], (int(ins.attr("index")),) + index)
    if ins.opcode == "bitcast":
        return _resolve_output(dump, exe, comp, ins.operands[0], index)
    if ins.opcode == "call":
        callee = dump.hlo[ins.attr("to_apply")]
        return _resolve_output(dump, exe, callee, callee.root.name, index)
    raise UserError(f"capture: cannot find the buffer of output {name}{{{index}}}")


def _kernel_sources(dump: Dump) -> dict[str, Path]:
    found = {}
    for path in dump.kernel_ir().values():
        for s in map(irtext.signature, path.read_text().split("\n")):
            # a kernel: `define ptr @name(ptr ...)`, called with XLA's call frame
            if s and s.keyword == "define" and s.head == "ptr" and s.params[:1] and s.params[0].startswith("ptr"):
                found[s.name] = path
    return found


def _kernels_in(thunks: tuple) -> list[str]:
    names = []
    for t in thunks:
        if isinstance(t, Kernel):
            names.append(t.name)
        elif isinstance(t, While):
            names += _kernels_in(t.cond) + _kernels_in(t.body)
        elif isinstance(t, Conditional):
            for b in t.branches:
                names += _kernels_in(b)
    return list(dict.fromkeys(names))


# Ops XLA:CPU runs as runtime thunks, never as LLVM IR.
RUNTIME_OPS = {"sort", "custom-call", "fft", "triangular-solve", "cholesky",
               "rng-bit-generator", "rng-get-and-update-state", "infeed", "outfeed", "all-reduce",
               "all-gather", "all-to-all", "reduce-scatter", "collective-permute", "topk"}


def _check_runtime_ops(dump: Dump) -> None:
    """Refuse, by name, the first op that only XLA's runtime could execute."""
    fused = {i.attr("calls") for c in dump.hlo.values() for i in c.instructions if i.opcode == "fusion"}
    for comp in dump.hlo.values():
        if comp.name in fused:
            continue
        for ins in comp.instructions:
            if ins.opcode == "custom-call" and (ins.attr("custom_call_target") or "").startswith(CMSIS_NN_TARGET):
                continue  # an int8 block, lowered onto CMSIS-NN
            if ins.opcode in RUNTIME_OPS:
                what = f"{ins.opcode} {ins.shape}"
                if ins.opcode == "custom-call":
                    what += f" (target {ins.attr('custom_call_target')})"
                raise UserError(f"unsupported op: HLO instruction '{ins.name}' ({what}): "
                                "no LLVM IR and no libjit kernel for it")


def _scratch_bytes(thunks: tuple) -> int:
    most = 0
    for t in thunks:
        if isinstance(t, LibCall):
            most = max([most, t.scratch] + [a.size for a in t.args if isinstance(a, Scratch)])
        elif isinstance(t, While):
            most = max(most, _scratch_bytes(t.cond), _scratch_bytes(t.body))
        elif isinstance(t, Conditional):
            most = max([most] + [_scratch_bytes(b) for b in t.branches])
    return most


def _io_arrays(workdir: Path, meta: dict) -> dict[str, np.ndarray]:
    """io.npz, with the element types numpy cannot store (bfloat16, ...) viewed back as such."""
    with np.load(workdir / "io.npz") as raw:
        io = {k: raw[k] for k in raw.files}
    for key, name in meta.get("dtypes", {}).items():
        io[key] = io[key].view(np_dtype(name))
    return io


def build_module(workdir: Path, function: str, xla_dots: bool = False,
                 source: Path | None = None) -> tuple[str, Manifest, list[str], hlo_sites.HloMap]:
    """(module text, manifest, log lines, the HLO instruction behind each call). Raises cmsis_calls.NotLowerable when an int8 block's
    custom call cannot become its CMSIS-NN call."""
    meta = json.loads((workdir / "io.json").read_text())
    blocks, log = {}, []
    if (workdir / "cmsis_nn.json").exists():
        found = json.loads((workdir / "cmsis_nn.json").read_text())
        blocks = found["blocks"]
        log += [f"kept XLA's code for {scope}: {why}" for scope, why in sorted(found["kept"].items())]
    io = _io_arrays(workdir, meta)
    dump = read_dump(workdir / "dump")
    _check_runtime_ops(dump)
    if (workdir / "executable.error").exists():
        raise UserError("capture: XLA could not serialize the executable: "
                        + (workdir / "executable.error").read_text().strip())
    try:
        exe = xe.decode_executable((workdir / "executable.bin").read_bytes())
    except xe.DecodeError as e:
        raise UserError(f"capture: cannot decode XLA's serialized executable: {e} (the schema is jaxlib "
                        f"0.10.2's; this is jaxlib {meta['versions'].get('jaxlib', '?')})") from None
    lowering = _Lowering(dump, exe.thunks, xla_dots, blocks)
    thunks = lowering.sequence(exe.thunks)
    log = lowering.log + log
    prefix = _sanitize(function)
    params = meta["params"]

    # outputs: where the ENTRY root's leaves live
    comp = entry_computation(dump.hlo)
    n_out = meta["n_outputs"]
    root_is_tuple = comp.root.shape.startswith("(")
    leaves = [(i,) if root_is_tuple else () for i in range(n_out)]
    out_slices = [_resolve_output(dump, exe, comp, comp.root.name, idx) for idx in leaves]
    output_allocs: dict[int, int] = {}
    for k, (alloc, _, _) in enumerate(out_slices):
        output_allocs.setdefault(alloc, k)
    constants = {i: np.frombuffer(b, dtype=np.uint8) for i, b in exe.constants.items()}
    if exe.missing_constants:
        raise UserError(f"capture: no value for XLA constant allocation {exe.missing_constants[0]}")
    values = {i: io[f"arg{i}"] for i in range(len(params))}
    plan = memplan.plan(prefix, exe.allocations, params, values, constants, output_allocs,
                        scratch=_scratch_bytes(thunks))
    entry_name = f"{prefix}_run"
    calls: list[tuple[str, str]] = []
    entry_ir = entry.generate(entry_name, thunks, plan, calls)

    header = f'target datalayout = "{TARGET.datalayout}"\ntarget triple = "{TARGET.triple}"\n\n'
    ctx = module.context()  # the modules linked into model.ll share one
    modules = [module.parse(f"; ModuleID = '{prefix}'\n" + header + entry_ir, f"{prefix}.entry.ll", ctx)]
    sources = _kernel_sources(dump)
    kernel_texts, by_file = [], {}
    for name in _kernels_in(thunks):
        if name not in sources:
            raise UserError(f"capture: XLA wrote no IR for kernel '{name}'")
        by_file.setdefault(sources[name], []).append(name)  # a kernel module may define several
    texts = {}
    for path, names in by_file.items():
        texts[tuple(names)] = fminmax.lower(retarget(normalize(path.read_text())))
    # before anything is linked: a function nothing provides is refused by its op, not at link
    ops = {t.kernel_name: t.op_name for t in _walk(exe.thunks) if isinstance(t, xe.KernelThunk)}
    runtime_symbols.check(texts, lambda names, base: _op_phrase(dump, [ops.get(n, n) for n in names], base))
    for (path, _), text in zip(by_file.items(), texts.values()):
        kernel_texts.append(text)
        modules.append(module.parse(text, path.name, ctx))
    wrappers = intrinsics.vector_wrappers("\n".join(kernel_texts))
    if wrappers:
        modules.append(module.parse(header + wrappers, "xla_vector_math.ll", ctx))
    linked = module.link(modules)
    linked.name = prefix

    def tensor(name, arr, sym, off=0, data=True):
        return Tensor(name, tuple(int(d) for d in arr.shape), str(arr.dtype), sym, off,
                      flat(arr) if data else ())

    inputs = tuple(tensor(p["name"], values[i], plan.places[_param_alloc(exe, i)][0])
                   for i, p in enumerate(params) if not p["weight"])
    weights = tuple(tensor(p["name"], values[i], plan.places[_param_alloc(exe, i)][0], data=False)
                    for i, p in enumerate(params) if p["weight"])
    outputs = []
    for k, (alloc, off, _) in enumerate(out_slices):
        sym, base = plan.places[alloc]
        outputs.append(tensor(f"out{k}", io[f"out{k}"], sym, base + off))
    # Values near zero are compared against a tenth of the output's largest magnitude: long
    # float reductions summed in another order cancel differently, and only there.
    # (over the finite values: NaN and inf are compared by position and sign)
    finite = [o[np.isfinite(o)] for o in (io[f"out{k}"] for k in range(len(outputs))) if o.dtype.kind == "f"]
    floats = [np.abs(o).max() for o in finite if o.size]
    atol = max([1e-6] + [float(np.float32(m * 0.1)) for m in floats])
    outs = [io[f"out{k}"] for k in range(len(outputs))]
    outs64 = [io[f"f64_out{k}"] for k in range(len(outputs))] if "f64_out0" in io else None
    rtol, basis = tolerance.derive(outs, outs64, atol, meta.get("float64", ""))
    manifest = Manifest(function, entry_name, inputs, tuple(outputs), weights, meta["versions"], atol=atol,
                        rtol=rtol, rtol_basis=basis)
    return str(linked), manifest, log, hlo_sites.build(dump, calls, source)


def _op_phrase(dump: Dump, op_names: list[str], base: str) -> str:
    """"op 'atan2' (HLO %atan2.3 in fusion.2)": the HLO instruction, inside the kernels' fusions,
    whose opcode calls the math function `base`; the kernel's own instruction if none does."""
    instrs = {i.name: i for c in dump.hlo.values() for i in c.instructions}
    opcodes = runtime_symbols.OPCODES.get(base, ())
    for op in op_names:
        seen, todo = set(), [c for c in (_called(instrs.get(op)),) if c]
        while todo:
            comp = dump.hlo.get(todo.pop(0))
            if comp is None or comp.name in seen:
                continue
            seen.add(comp.name)
            for i in comp.instructions:
                if i.opcode in opcodes:
                    return f"op '{i.opcode}' (HLO %{i.name} in {op})"
                if _called(i):
                    todo.append(_called(i))
        ins = instrs.get(op)
        if ins is not None and ins.opcode in opcodes:
            return f"op '{ins.opcode}' (HLO %{ins.name})"
    ins = instrs.get(op_names[0])
    return f"op '{ins.opcode}' (HLO %{ins.name})" if ins else f"kernel '{op_names[0]}'"


def _called(ins) -> str | None:
    return ins.attr("calls") if ins is not None and ins.opcode == "fusion" else None


def _param_alloc(exe: xe.Executable, number: int) -> int:
    for a in exe.allocations:
        if a.kind == "parameter" and a.parameter == number:
            return a.index
    raise UserError(f"capture: parameter {number} has no buffer (unused parameters are kept)")


def capture(source: Path, function: str | None, out_dir: Path, ir_dots: bool = False,
            timeout: float = DEFAULT_TIMEOUT, example: Path | None = None, examples: int = 1,
            every_layer: bool = False) -> Captured:
    """`source` a model file (FILE.py with `function`, or a .tflite or .onnx file, whose function
    is the reader's and whose reference outputs are its format's reference interpreter's: TFLite
    Micro's, onnx.reference's). For such a model: `example` a .npy input, or a stack of them (else
    `examples` of the reader's); the first is measured, every one is checked (model.json's
    vectors); `every_layer` (.tflite): every operator's output is an output."""
    source = Path(source).resolve()
    if not source.is_file():
        raise UserError(f"{source}: no such file")
    model = None
    if imported.is_model_file(source):
        model = imported.read(source, every_layer)  # an unsupported op: one line, before anything runs
        function = model.name
        xss = imported.example_inputs(model, example, examples)
        xs = xss[0]
    elif example is not None or examples != 1 or every_layer:
        what = f"--input {example}" if example is not None else "--every-layer" if every_layer else "--examples"
        raise UserError(f"{what}: for a .tflite or .onnx model; a JAX function's example inputs and outputs "
                        "are its own (fn.example_inputs)")
    out_dir = Path(out_dir)
    with tempfile.TemporaryDirectory(prefix="specializer-capture-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        given = None
        if model is not None and example is not None:
            given = Path(tmp) / "inputs.npz"
            imported.save_inputs(model, xs, given)
        flags = IR_DOT_FLAGS if ir_dots else []
        run_worker(source, function, work, flags, timeout, inputs=given, every_layer=every_layer)
        try:
            text, manifest, log, hlo = build_module(work, function, xla_dots=ir_dots, source=source)
        except cmsis_calls.NotLowerable as e:
            # every block back to XLA's own code, which computes it exactly
            shutil.rmtree(work)
            work.mkdir()
            run_worker(source, function, work, flags, timeout, lower_int8=False, inputs=given,
                       every_layer=every_layer)
            text, manifest, log, hlo = build_module(work, function, xla_dots=ir_dots, source=source)
            log = [f"kept XLA's code for every int8 block: {e}"] + log
        found = layers.load(work / layers.FILE_NAME)  # a quantize() model's blocks (the worker's)
    if model is not None:  # the reference outputs are the format's own interpreter's
        manifest, checked = imported.with_oracle(model, manifest, xss[1:])
        log = log + checked
        found = imported.layers_of(model)
    try:
        manifest_text = manifest.dumps()  # before anything is written: both files or neither
    except (TypeError, ValueError) as e:
        raise UserError(f"capture: cannot write model.json: {e}") from None
    out_dir.mkdir(parents=True, exist_ok=True)
    ll, js = out_dir / "model.ll", out_dir / "model.json"
    files = [(ll, text), (js, manifest_text), (out_dir / hlo_sites.FILE_NAME, hlo.dumps())]
    if log:
        files.append((out_dir / "capture.log", "".join(f"capture: {line}\n" for line in log)))
    else:  # a log from an earlier capture into this directory would describe another model
        (out_dir / "capture.log").unlink(missing_ok=True)
    if found is not None:
        files.append((out_dir / layers.FILE_NAME, found.dumps()))
    else:  # likewise: the layers of another model
        (out_dir / layers.FILE_NAME).unlink(missing_ok=True)
    write_all(files)
    return Captured(ll, js, manifest, tuple(log))
