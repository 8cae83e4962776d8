"""The all-args int8 depthwise rule: weights known at compile time, laid out for SMLAD.

A CMSIS-NN depthwise call (any of the forms capture calls, or arm_depthwise_conv_s4: its int4 weights
unpacked here, a few bytes a channel) whose filter, bias, quantization and
parameters are constant globals, with batch 1, dilation 1 and a horizontal stride of 1 or 2, calls
``libjit_dwconv_s8`` (libkernels/dwconv_s8.c) instead, or at a channel multiplier above 1
``libjit_dwconv_mult_s8`` (libkernels/dwconv_mult_s8.c: one copy of an input channel serves its
output channels), with:

* the weights as int16 pairs per output channel and filter row, in the order the kernel's SMLADs read
  them (a new constant global: kw - 1 int16 pairs per filter row of kw taps at stride 1 (1 for kw 1), (kw+1)/2
  at stride 2);
* the bias with ``input_offset * sum(the channel's weights)`` folded in, so the kernel adds no
  offset per tap: its padded plane holds the input zero point where CMSIS-NN skips a tap, which
  then adds ``(zero point + input_offset) * w = 0`` as CMSIS-NN's skipped tap does;
* one int16 scratch plane (one channel of the padded input) shared by every such call of the
  module: RAM the kernel needs beyond the arena, reported in each decision.

* the requantization as SMMULR and one rounding shift (requant_proof.py) when every channel's
  constants allow it (the weights and bias then doubled), else the library's arm_nn_requantize.

The kernel's sums equal CMSIS-NN's (integers, no overflow) and its requantization is CMSIS-NN's
or proven equal to it over every value the accumulator can take: results are bit-exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specializer.optimize import int8_layout
from specializer.llvm.irtext import direct_calls, global_arg, quote

FORMS = ("arm_depthwise_conv_wrapper_s8", "arm_depthwise_conv_s8", "arm_depthwise_conv_3x3_s8",
         "arm_depthwise_conv_s8_opt", "arm_depthwise_conv_s4")  # _s4: int4 weights, unpacked here
KERNEL = "libjit_dwconv_s8"
MULT_KERNEL = "libjit_dwconv_mult_s8"  # its arguments: KERNEL's, then the multiplier
PLANE = "libjit.dwconv.plane"
_ARGS = 11  # ctx, params, quant_params, input_dims, input, filter_dims, filter, bias_dims, bias, output_dims, output


@dataclass(frozen=True)
class Depthwise:
    scope: str  # the call's params global
    callee: str  # the CMSIS-NN function the call named
    kernel: str = ""  # the kernel it now calls ("" when left alone)
    reason: str = ""
    weight_bytes: tuple[int, int] = (0, 0)  # int8 (or packed int4) filter -> int16 pairs
    plane_bytes: int = 0  # the scratch plane this call needs
    fast: bool = False  # every channel's requantization proven equal in the fast form

    def log_line(self) -> str:
        if self.kernel:
            return (f"int8 depthwise {quote(self.scope)}: constant weights, calls {quote(self.kernel)} (weights "
                    f"as int16 SMLAD pairs {self.weight_bytes[0]} -> {self.weight_bytes[1]} bytes, input offset "
                    f"folded into the bias, a {self.plane_bytes}-byte int16 plane, requantization "
                    f"{'SMMULR (proven equal for every channel)' if self.fast else 'arm_nn_requantize'})")
        return f"int8 depthwise {quote(self.scope)}: left on {self.callee} ({self.reason})"


@dataclass(frozen=True)
class Shape:
    in_h: int
    in_w: int
    ch: int  # input channels
    kh: int
    kw: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_left: int
    out_h: int
    out_w: int
    mult: int = 1  # channel multiplier: output channel c * mult + m reads input channel c

    @property
    def out_c(self) -> int:
        return self.ch * self.mult

    @property
    def kernel(self) -> str:
        return KERNEL if self.mult == 1 else MULT_KERNEL

    @property
    def row_words(self) -> int:
        """int16 pairs per filter row (libkernels/dwconv_row_s8.h): stride 1, kw - 1 (kw/2 even and
        (kw-1)/2 odd pairs; 1 for kw 1); stride 2, (kw+1)/2."""
        return max(self.kw - 1, 1) if self.stride_w == 1 else (self.kw + 1) // 2

    def plane(self) -> tuple[int, int]:
        """(rows, columns) of the padded int16 plane: every tap the kernel reads, and the input
        inside its padding; columns even so each row starts on a word."""
        if self.stride_w == 1:  # an even column's output and its odd neighbour read kw/2 + 1 words
            cols = ((self.out_w - 1) & ~1) + 2 * (self.kw // 2 + 1)
        else:
            cols = (self.out_w - 1) * self.stride_w + 2 * ((self.kw + 1) // 2)
        cols = max(cols, self.pad_left + self.in_w)
        rows = max((self.out_h - 1) * self.stride_h + self.kh, self.pad_top + self.in_h)
        return rows, cols + (cols & 1)


@dataclass(frozen=True)
class Args(int8_layout.KernelArgs):
    """libjit_dwconv_s8's arguments for one layer (libjit_s8.h): int16 pairs (doubled when fast)."""
    shape: Shape

    def ints(self) -> list[int]:
        """The i32 arguments after the five pointers, in the kernel's order."""
        s = self.shape
        return [s.in_h, s.in_w, s.ch, s.kh, s.kw, s.stride_h, s.stride_w, s.pad_top, s.pad_left, s.out_h, s.out_w,
                *s.plane(), self.pad_value, self.fast_mode(), self.out_offset, *self.act] + \
            ([s.mult] if s.mult != 1 else [])


def arguments(shape: Shape, w: np.ndarray, bias: list[int], mult: list[int], shift: list[int], in_off: int,
              out_off: int, act: tuple[int, int]) -> Args:
    """The kernel's arguments for a layer: w [kh][kw][out_c] int8 values, CMSIS-NN's parameters."""
    w = np.asarray(w, np.int64).reshape(shape.kh, shape.kw, shape.out_c)
    taps = w.reshape(-1, shape.out_c).T  # [out_c][kh * kw]
    fast, rq = int8_layout.requant_records(taps, bias, mult, shift, in_off, out_off)
    return Args(_pairs(w * (2 if fast else 1), shape), rq, fast, -in_off, out_off, act, shape)


def _read(g: int8_layout.Globals, args: list[str], int4: bool) -> Args | str:
    """The kernel's arguments from a depthwise call's constant globals, or why it cannot have them
    (int4: an s4 call's, its weights packed)."""
    params = g.ints(global_arg(args[1]), 11)
    dims = [g.ints(global_arg(args[i]), 4) for i in (3, 5, 9)]
    if params is None or None in dims:
        return "parameters or dims not constant globals"
    in_off, out_off, ch_mult, sw, sh, pw, ph, dw, dh, act_min, act_max = params
    (n, in_h, in_w, in_c), (_, kh, kw, fc), (on, out_h, out_w, out_c) = dims
    if ch_mult < 1 or in_c * ch_mult != out_c or fc != out_c:
        return f"channel multiplier {ch_mult} with {in_c} input and {out_c} output channels"
    if n != 1 or on != 1:
        return f"batch {n}"
    if (dw, dh) != (1, 1):
        return f"dilation {dh}x{dw}"
    if sw not in (1, 2) or sh < 1:
        return f"stride {sh}x{sw} (the kernel reads word pairs at stride 1 or 2)"
    k = int8_layout.constants(g, args, out_c, kh * kw * out_c, int4=int4)
    if isinstance(k, str):
        return k
    shape = Shape(in_h, in_w, in_c, kh, kw, sh, sw, ph, pw, out_h, out_w, ch_mult)
    return arguments(shape, k.weights, k.bias, k.mult, k.shift, in_off, out_off, (act_min, act_max))


def _pairs(w: np.ndarray, s: Shape) -> np.ndarray:
    """[kh][kw][out_c] int8 -> per output channel, per filter row, the int16 pairs the kernel's SMLADs
    read (libkernels/dwconv_row_s8.h): stride 1, (w0,w1),(w2,w3),.. then (w1,w2),(w3,w4),.. (kw 1:
    (w0,0)); stride 2, (w0,w1),(w2,w3),.. with a tap past the filter's width 0."""
    padded = np.zeros((s.kh, s.kw + 2, s.out_c), np.int32)
    padded[:, :s.kw] = w
    if s.stride_w == 1 and s.kw > 1:
        even, odd = padded[:, :2 * (s.kw // 2)], padded[:, 1:1 + 2 * ((s.kw - 1) // 2)]
        rows = np.concatenate([even, odd], axis=1)  # [kh][2(kw-1)][ch]
    else:
        rows = padded[:, :2 * s.row_words]
    return rows.transpose(2, 0, 1).reshape(-1).astype(np.int16)


def depthwise(text: str, skipped) -> tuple[str, tuple[Depthwise, ...]]:
    """The rule (module docstring) on every depthwise call of `text` that `skipped(line)` does not
    name."""
    lines = text.split("\n")
    g = int8_layout.Globals(lines)
    notes, new, plane, named, kernels = [], [], 0, {}, set()
    for call in list(direct_calls(lines, FORMS)):
        args = call.args
        if len(args) != _ARGS or skipped(lines[call.line]):
            continue
        scope = global_arg(args[1]) or args[1]
        int4 = call.callee.endswith("_s4")
        got = _read(g, args, int4)
        if isinstance(got, str):
            notes.append(Depthwise(scope, call.callee, reason=got))
            continue
        s = got.shape
        rows, cols = s.plane()
        plane = max(plane, rows * cols)
        key = tuple(args[:4] + args[5:10])  # all but the activations: calls alike share their constants
        if key not in named:
            named[key] = f"libjit.dwconv.{len(named)}"
            new += [int8_layout.constant_array(named[key] + ".w16", "i16", got.weights.tolist()),
                    int8_layout.constant_array(named[key] + ".rq", "i32", got.rq)]
        w_name, rq_name = named[key] + ".w16", named[key] + ".rq"
        kargs = [args[10], args[4], f"ptr {quote(w_name)}", f"ptr {quote(rq_name)}", f"ptr {quote(PLANE)}",
                 *(f"i32 {v}" for v in got.ints())]
        line = lines[call.line]
        lines[call.line] = line[:call.start] + f"call i32 {quote(s.kernel)}({', '.join(kargs)})" + line[call.end:]
        kernels.add(s.kernel)
        n = s.kh * s.kw * s.out_c
        notes.append(Depthwise(scope, call.callee, s.kernel, weight_bytes=((n + 1) // 2 if int4 else n, 2 * got.weights.size),
                               plane_bytes=2 * rows * cols, fast=got.fast))
    if not plane:
        return text, tuple(notes)
    new.append(f"{quote(PLANE)} = internal global [{plane} x i16] zeroinitializer, align 4")
    for k in sorted(kernels):
        new.append(f"declare i32 {quote(k)}({', '.join(['ptr'] * 5 + ['i32'] * (18 if k == KERNEL else 19))})")
    return "\n".join(lines).rstrip("\n") + "\n\n" + "\n".join(new) + "\n", tuple(notes)
