"""Weights are constants: give a kernel a copy of a constant weight laid out for how it reads it.

Runs in the all-args build only, on the model module before it is linked with the kernel
library (dims never knows weight values; Glow's default never looks at them). One rule so far:

* **pruned dense layer**: ``libjit_matmul_f32(out, x, @W, 1, 1, k, n, 0, rt)`` -- a row vector
  times a constant weight global -- whose weight is at most MAX_DENSITY nonzero becomes
  ``libjit_vecmat_csc_f32(out, x, @W.csc.val, @W.csc.row, @W.csc.start, n)``: the nonzeros
  as compressed sparse columns (values f32, row indices and column starts u16), so every zero
  weight's multiply-add is gone and the weight takes less flash. The sum runs over the same
  rows in the same order with the zero terms left out: results equal the dense kernel's except
  when an input is inf or NaN (0 * inf is NaN; a dropped term contributes nothing).
  MAX_DENSITY is measured (reports/kernels.md, the 1x256 -> 256 sweep): the CSC loop costs
  9.1-9.4 est. cycles per nonzero at 70-80% sparsity (index load, indexed load, value load,
  loop), the dense vecmat 3.5 per multiply-add since its loads pipeline, so it pays below about
  37% nonzeros (43% when the dense loop cost 4.8).

* **int8 conv with constant per-channel parameters** (cmsis_nn_shim only):
  ``arm_convolve_wrapper_s8(...)`` whose quant params (``{multiplier*, shift*}``) and bias are
  constant globals calls ``shim_convolve_wrapper_s8_const`` instead: the same dispatch, code and
  results, each form it picks with its output-channel loop fully unrolled, so once the shapes
  are constant the choice folds away and each channel's multiplier, shift and bias become
  immediates in the clone. Likewise ``arm_convolve_s8(...)`` (a block capture does not hand to
  the wrapper) -> ``shim_convolve_s8_const``. A real CMSIS-NN checkout has no such functions: the
  call is left alone there.

* **int8 depthwise with constant weights** (any CMSIS-NN, the kernel is libjit's own):
  relayout_depthwise.py -- the weights as int16 SMLAD pairs for ``libjit_dwconv_s8``, the input
  offset folded into the bias, the requantization in a form proven equal where it can be.

* **int8 add with constant parameters** (any CMSIS-NN): relayout_add.py -- each input's
  requantization tabulated over its 256 values for ``libjit_add_s8``.

Each decision, applied or not, is returned for the specialization log. Calls named in `skip` (the
model's call numbers, callsites.py: those the comparison measured faster as shape-only clones)
are left alone and not logged.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from specializer.library.cmsis_api import FUNCTIONS
from specializer.llvm.passes import MODEL, Pass, option
from specializer.optimize import callsites, int8_layout, relayout_add, relayout_conv, relayout_depthwise
from specializer.optimize.callsites import calls_option
from specializer.optimize.state import BuildState
from specializer.llvm import irtext, packweights
from specializer.llvm.irtext import direct_calls, global_arg, quote

MAX_DENSITY = 0.35
U16 = 65535
CSC_KERNEL = "libjit_vecmat_csc_f32"



@dataclass(frozen=True)
class Relayout:
    weight: str
    kernel: str  # the kernel the call now goes to ("" when left alone)
    shape: tuple[int, int]  # (k, n)
    nonzeros: int
    dense_bytes: int
    new_bytes: int
    reason: str = ""  # why it was left alone

    def log_line(self) -> str:
        k, n = self.shape
        head = f"weight {quote(self.weight)} (f32[{k}x{n}], {self.nonzeros} of {k * n} nonzero"
        if self.kernel:
            return (f"{head}): re-laid out as compressed sparse columns for {quote(self.kernel)}, "
                    f"{self.dense_bytes} -> {self.new_bytes} bytes")
        return f"{head}): left dense ({self.reason})"


def _hex(v: float) -> str:
    return "0x" + struct.pack(">d", float(np.float32(v))).hex().upper()


def weight_values(line: str, count: int) -> np.ndarray | None:
    """The values of a flat `[count x float]` constant global from its definition line."""
    d = irtext.global_def(line) if line.startswith("@") else None
    if d is None or d.kind != "constant" or d.type != f"[{count} x float]":
        return None
    init = line[d.init_at:]
    if init.startswith("zeroinitializer"):
        return np.zeros(count, np.float32)
    raw = packweights.float_bytes(init[:init.index("]") + 1] if init.startswith("[") else "", count)
    return None if raw is None else np.frombuffer(raw, "<f4").copy()


def _csc(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """w [k][n] -> (values, row indices, column starts), rows ascending within a column."""
    cols = [np.nonzero(w[:, j])[0] for j in range(w.shape[1])]
    rows = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    vals = np.concatenate([w[c, j] for j, c in enumerate(cols)]) if cols else np.zeros(0, np.float32)
    start = np.concatenate([[0], np.cumsum([len(c) for c in cols])])
    return vals.astype(np.float32), rows, start


def _i16(v) -> int:
    """An unsigned 16-bit value as LLVM writes an i16 (two's complement, signed)."""
    v = int(v)
    return v - 65536 if v > 32767 else v


CONV_S8 = "arm_convolve_s8"
CONV_S8_CONST = "shim_convolve_s8_const"
# each conv with constant per-channel parameters -> the shim's copy with its channel loop
# unrolled; quant params and bias are arguments 2 and 8 of both
# (a form the wrapper picks, called directly, has the wrapper's signature: its copy re-picks it)
CONST_CONVS = {"arm_convolve_wrapper_s8": "shim_convolve_wrapper_s8_const",
               "arm_convolve_1x1_s8_fast": "shim_convolve_wrapper_s8_const",
               "arm_convolve_1x1_s8": "shim_convolve_wrapper_s8_const",
               "arm_convolve_1_x_n_s8": "shim_convolve_wrapper_s8_const", CONV_S8: CONV_S8_CONST}
_ARGS = {f.name: len(f.params) for f in FUNCTIONS}  # v7.0.0: 11 and 12


@dataclass(frozen=True)
class ConstConv:
    scope: str  # the block's quant params global
    kernel: str  # the kernel the call now goes to ("" when left alone)
    reason: str = ""

    callee: str = CONV_S8  # the CMSIS-NN function the call names

    def log_line(self) -> str:
        if self.kernel:
            return (f"int8 conv {quote(self.scope)}: constant quant params and bias, calls "
                    f"{quote(self.kernel)} (channel loop unrolled: per-channel constants become immediates)")
        return f"int8 conv {quote(self.scope)}: left on {self.callee} ({self.reason})"


def _constant_global(defs: dict, lines: list[str], arg: str) -> bool:
    name = global_arg(arg)
    return name in defs and " constant " in lines[defs[name]]


def _skipped(text: str, skip: frozenset):
    """line -> whether the call on it is one of `skip`."""
    numbers = callsites.Numbers(text) if skip else None
    return lambda line: numbers is not None and numbers.of(line) in skip


def const_convs(text: str, shim: bool, skip: frozenset = frozenset()) -> tuple[str, tuple[ConstConv, ...]]:
    """The int8 conv rule (module docstring): `shim` says whether libjit is built on the shim."""
    lines = text.split("\n")
    defs = irtext.global_lines(lines)
    notes = []
    skipped = _skipped(text, skip)
    for call in list(direct_calls(lines, tuple(CONST_CONVS))):
        args, callee = call.args, call.callee
        const = CONST_CONVS[callee]
        if len(args) != _ARGS[callee] or skipped(lines[call.line]):
            continue
        name = global_arg(args[2]) or args[2]
        if not shim:
            notes.append(ConstConv(name, "", "a real CMSIS-NN checkout has no " + const, callee))
        elif not (_constant_global(defs, lines, args[2]) and _constant_global(defs, lines, args[8])):
            notes.append(ConstConv(name, "", "quant params or bias not a constant global", callee))
        else:
            lines[call.line] = lines[call.line].replace("@" + callee + "(", "@" + const + "(", 1)
            notes.append(ConstConv(name, const, callee=callee))
    used = sorted({n.kernel for n in notes if n.kernel})
    if not used:
        return text, tuple(notes)
    callee_of = {v: k for k, v in CONST_CONVS.items()}  # (any of a copy's callees: one signature)
    decls = [f"declare i32 @{k}({', '.join(['ptr'] * _ARGS[callee_of[k]])})" for k in used]
    return "\n".join(lines).rstrip("\n") + "\n\n" + "\n".join(decls) + "\n", tuple(notes)


def relayout(text: str, shim: bool = True, skip: frozenset = frozenset(),
             widen: float = relayout_conv.DEFAULT_WIDEN,
             unpack4: float = relayout_conv.DEFAULT_UNPACK4) -> tuple[str, tuple]:
    """Apply the rules to every call of the model module `text` but those in `skip` (see the
    module docstring)."""
    text, kernels = relayout_conv.convs(text, _skipped(text, skip), widen, unpack4)
    text, convs = const_convs(text, shim, skip)
    text, depthwise = relayout_depthwise.depthwise(text, _skipped(text, skip))
    text, adds = relayout_add.adds(text, _skipped(text, skip))
    text, notes = _dense(text, skip)
    return text, notes + kernels + convs + depthwise + adds


def _dense(text: str, skip: frozenset = frozenset()) -> tuple[str, tuple[Relayout, ...]]:
    lines = text.split("\n")
    defs = irtext.global_lines(lines)
    done: dict[str, Relayout] = {}
    notes, new_globals = [], []
    skipped = _skipped(text, skip)
    for call in list(direct_calls(lines, ("libjit_matmul_f32",))):
        args, ints = call.args, call.ints(3, 6)
        name = global_arg(args[2]) if len(args) == 9 else None
        if name is None or ints is None or skipped(lines[call.line]):
            continue
        batch, rows, k, n, lt, rt = ints
        if batch != 1 or rows != 1 or lt != 0:
            continue
        if name not in done:
            done[name] = _decide(name, lines[defs[name]] if name in defs else "", k, n, rt, new_globals)
            notes.append(done[name])
        r = done[name]
        if r.kernel:
            csc = [f"ptr {quote(name + '.csc.' + part)}" for part in ("val", "row", "start")]
            line = lines[call.line]
            lines[call.line] = (line[:call.start] + f"call void {quote(CSC_KERNEL)}("
                                + ", ".join([args[0], args[1], *csc, f"i32 {n}"]) + ")" + line[call.end:])
    if not any(r.kernel for r in notes):
        return text, tuple(notes)
    if not irtext.declares_or_defines(text, CSC_KERNEL):
        new_globals.append(f"declare void {quote(CSC_KERNEL)}(ptr, ptr, ptr, ptr, ptr, i32)")
    return "\n".join(lines).rstrip("\n") + "\n\n" + "\n".join(new_globals) + "\n", tuple(notes)


def _decide(name: str, line: str, k: int, n: int, rt: int, out: list[str]) -> Relayout:
    values = weight_values(line, k * n)
    dense = 4 * k * n
    if values is None:
        return Relayout(name, "", (k, n), 0, dense, dense, "not a flat constant f32 weight")
    w = values.reshape(n, k).T if rt else values.reshape(k, n)
    nnz = int(np.count_nonzero(w))
    if nnz > MAX_DENSITY * k * n:
        return Relayout(name, "", (k, n), nnz, dense, dense,
                        f"{nnz / (k * n):.0%} nonzero > {MAX_DENSITY:.0%}: the dense kernel is faster")
    if k > U16 or nnz > U16:
        return Relayout(name, "", (k, n), nnz, dense, dense, "too large for 16-bit indices")
    vals, rows, start = _csc(w)
    out.append(int8_layout.constant_array(name + ".csc.val", "float", [_hex(v) for v in vals]))
    out.append(int8_layout.constant_array(name + ".csc.row", "i16", [_i16(r) for r in rows]))
    out.append(int8_layout.constant_array(name + ".csc.start", "i16", [_i16(s) for s in start]))
    return Relayout(name, CSC_KERNEL, (k, n), nnz, dense, 4 * nnz + 2 * nnz + 2 * (n + 1))


@dataclass(frozen=True)
class RelayoutPass(Pass):
    name = "relayout"
    stage = MODEL
    summary = ("constant weights re-laid out for the kernel that reads them: a pruned dense layer's weight "
               "as compressed sparse columns for libjit_vecmat_csc_f32; an int8 conv with constant "
               "per-channel parameters on the shim's unrolled conv; an int8 depthwise conv with constant "
               "weights on libjit_dwconv_s8; an int8 add on libjit_add_s8's tables (relayout.py); numbers "
               "the model's calls "
               "first (callsites.py)")
    shape_only: frozenset = calls_option("leaves alone")
    widen: float = option(relayout_conv.DEFAULT_WIDEN, "int16 weight panels (faster, twice the bytes) for at "
                          "most X times the int8 conv weights' bytes, to the layers with the most output pixels; "
                          "the rest stay int8 (relayout_conv.py)", "float")
    unpack4: float = option(relayout_conv.DEFAULT_UNPACK4, "an int4 conv's or dense layer's weights unpacked "
                            "into int8 panels for libjit_conv_s8 while the panels stay within X times the "
                            "int4 calls' packed bytes, to the layers with the most output pixels; the rest "
                            "keep the s4 function (relayout_conv.py)", "float", minimum=0.0)

    def run(self, state: BuildState) -> None:
        text = callsites.number(state.as_text())
        text, notes = relayout(text, state.context.cmsis_nn.kind == "shim", self.shape_only, self.widen,
                               self.unpack4)
        state.set_text(text)
        state.relaid += tuple(notes)
