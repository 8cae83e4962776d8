"""What the all-args int8 kernels' rules share: reading a layer's constant globals from the
module text, writing new constant arrays (relayout's sparse rule too), and the per-channel
requantization records.

The records (libkernels/libjit_s8.h) hold, per output channel, the bias with the input offset
folded in (``bias + input_offset * sum(w)``: the kernels add no offset per tap; where a window
leaves the input they read the zero point, whose term is then 0 as CMSIS-NN's skipped tap) and
CMSIS-NN's multiplier and shift -- or, when requant_proof.fast_form holds for every channel, the
fast form's constants, with the weights and bias doubled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from specializer.llvm import irtext
from specializer.llvm.irtext import quote
from specializer.optimize import requant_proof

_PAIR = re.compile(r"^\{ ptr (@\S+), ptr (@\S+) \}")


class Globals:
    """The module's constant globals, read on demand."""

    def __init__(self, lines: list[str]):
        self.lines, self.at = lines, irtext.global_lines(lines)

    def _def(self, name: str | None):
        line = self.lines[self.at[name]] if name in self.at else ""
        d = irtext.global_def(line) if line.startswith("@") else None
        return (d, line) if d is not None and d.kind == "constant" else (None, line)

    def ints(self, name: str | None, count: int) -> list[int] | None:
        d, line = self._def(name)
        if d is None or d.type != f"[{count} x i32]":
            return None
        items = irtext.array_elements(line[d.init_at:], "i32")
        if items == []:
            return [0] * count
        if items is None or not all(v.lstrip("-").isdigit() for v in items):
            return None
        return [int(v) for v in items]

    def bytes(self, name: str | None, count: int) -> bytes | None:
        d, line = self._def(name)
        if d is None or d.type != f"[{count} x i8]":
            return None
        return irtext.byte_elements(line[d.init_at:], count)

    def pair(self, name: str | None) -> tuple[str, str] | None:
        d, line = self._def(name)
        m = _PAIR.match(line[d.init_at:]) if d is not None and d.type == "{ ptr, ptr }" else None
        return (irtext.unquote(m.group(1)[1:]), irtext.unquote(m.group(2)[1:])) if m else None


@dataclass(frozen=True)
class KernelArgs:
    """What an all-args int8 kernel is called with besides its pointers (each kernel's Args adds
    its shape and the order of its i32 arguments)."""
    weights: np.ndarray  # laid out for the kernel, flat
    rq: list[int]  # per channel 4 ints (requant_records)
    fast: bool
    pad_value: int  # the input zero point: what the kernel reads where a window leaves the input
    out_offset: int
    act: tuple[int, int]

    def fast_mode(self) -> int:
        """The kernels' `fast` argument (libkernels/requant_s8.h): 0 arm_nn_requantize; 1 the fast
        form; 2 the fast form without its sign step, where the clamp makes it the same
        (requant_proof.sign_step_needed)."""
        if not self.fast:
            return 0
        return 1 if requant_proof.sign_step_needed(self.out_offset, self.act) else 2

    def pointer_arrays(self) -> list[tuple[str, np.ndarray | None]]:
        """Array arguments after the scratch, in the kernel's order (None: a null pointer)."""
        return []


@dataclass(frozen=True)
class Constants:
    """A layer call's constant weights and per-channel parameters (CMSIS-NN's argument order:
    quant params at 2, filter at 6, bias at 8)."""
    weights: np.ndarray  # int8, the filter's own order
    bias: list[int]
    mult: list[int]
    shift: list[int]


def unpack_int4(packed: bytes, count: int) -> np.ndarray:
    """`count` int4 weights packed two a byte, the first in the low nibble (CMSIS-NN's s4
    functions), as int8 values."""
    b = np.frombuffer(packed, np.uint8)
    nibbles = np.stack([b & 0xF, b >> 4], axis=-1).reshape(-1)[:count].astype(np.int8)
    return np.where(nibbles > 7, nibbles - 16, nibbles).astype(np.int8)


def constants(g: Globals, args: list[str], out_c: int, n_weights: int,
              per_tensor: bool = False, int4: bool = False) -> Constants | str:
    """The call's constants, or why it has none (a parameter not a constant global). per_tensor:
    the quant params are one {multiplier, shift} (fully connected), given to every channel;
    n_weights: the filter's, one byte each, or (int4: an s4 function's call) two a byte."""
    if per_tensor:
        one = g.ints(irtext.global_arg(args[2]), 2)
        mult, shift = ([one[0]] * out_c, [one[1]] * out_c) if one else (None, None)
    else:
        quant = g.pair(irtext.global_arg(args[2]))
        mult, shift = (g.ints(q, out_c) for q in quant) if quant else (None, None)
    if mult is None or shift is None:
        return "quant params not constant globals"
    filt = g.bytes(irtext.global_arg(args[6]), (n_weights + 1) // 2 if int4 else n_weights)
    if filt is None:
        return "filter not a constant global"
    bias = [0] * out_c if args[8] == "ptr null" else g.ints(irtext.global_arg(args[8]), out_c)
    if bias is None:
        return "bias not a constant global"
    weights = unpack_int4(filt, n_weights) if int4 else np.frombuffer(filt, np.int8)
    return Constants(weights, bias, mult, shift)


def _intervals(taps: np.ndarray, bias: list[int], in_off: int) -> tuple[list[int], np.ndarray, np.ndarray]:
    """Per channel: the bias with the input offset folded in, and the interval of the accumulator
    without it (every tap reads an int8 value, or the zero point)."""
    taps = np.asarray(taps, np.int64)
    folded = [int(b) + in_off * int(t) for b, t in zip(bias, taps.sum(axis=1))]
    lo = np.minimum(-128 * taps, 127 * taps).sum(axis=1)
    hi = np.maximum(-128 * taps, 127 * taps).sum(axis=1)
    return folded, lo, hi


def constant_channels(taps: np.ndarray, bias: list[int], mult: list[int], shift: list[int], in_off: int,
                      out_off: int, act: tuple[int, int]) -> list[int | None]:
    """Per channel of int8 weights taps [channels][taps]: its output value when it is the same for
    every input (requant_proof.constant_output), else None."""
    folded, lo, hi = _intervals(taps, bias, in_off)
    return [requant_proof.constant_output(int(m), int(s), b, out_off, act, int(a), int(z))
            for m, s, b, a, z in zip(mult, shift, folded, lo, hi)]


def requant_records(taps: np.ndarray, bias: list[int], mult: list[int], shift: list[int], in_off: int,
                    out_off: int) -> tuple[bool, list[int]]:
    """(fast, 4 ints per channel) for int8 weights taps [channels][taps] (not yet doubled)."""
    folded, lo, hi = _intervals(taps, bias, in_off)
    forms = [requant_proof.fast_form(int(m), int(s), b, out_off, int(a), int(z))
             for m, s, b, a, z in zip(mult, shift, folded, lo, hi)]
    if all(forms):
        return True, [v for f in forms for v in (f.bias2, f.multiplier, f.k, f.rs)]
    wrapped = [wrap32(b) for b in folded]  # int32, as CMSIS-NN adds it
    return False, [v for b, m, s in zip(wrapped, mult, shift) for v in (b, int(m), int(s), 0)]


def wrap32(x):
    """An integer (or an int64 array) as the int32 the core holds: two's complement, wrapped."""
    return ((x + (1 << 31)) % (1 << 32)) - (1 << 31)


def constant_array(name: str, ty: str, items) -> str:
    """A new constant global `[N x ty]` holding `items` (each written after its type; zeroinitializer
    when there are none): the arrays relayout's rules add beside the model."""
    body = f"[{', '.join(f'{ty} {v}' for v in items)}]" if len(items) else "zeroinitializer"
    return f"{quote(name)} = internal unnamed_addr constant [{len(items)} x {ty}] {body}, align 4"
