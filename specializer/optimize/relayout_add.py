"""An int8 add as two table lookups (all-args): ``arm_elementwise_add_s8`` -> ``libjit_add_s8``.

CMSIS-NN's add requantizes each input on its own before it adds them:

    a' = requantize((a + offset_1) << left_shift, multiplier_1, shift_1)     (likewise b')
    out = clamp(requantize(a' + b', out_multiplier, out_shift) + out_offset)

so a' is a function of one int8 value: with the call's constants known, the compiler computes
a' and b' for all 256 values (NumPy, CMSIS-NN's integer steps: requant_proof.reference) and the
kernel adds two table entries and requantizes the sum -- three requantizations an element become
one (ResNet-8's adds: 38 est. cycles an element before). The sum's range is the tables' extremes
added, so requant_proof.fast_form can prove the output's cheaper form for it (the tables then
doubled). Applied where left_shift >= 16 (TFLite's int8 add uses 20): there CMSIS-NN's DSP path,
which takes the 16-bit lanes before shifting, computes the same as its plain path and the shim.
Tables: 2 KB of flash per add (calls with the same constants share them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specializer.llvm.irtext import direct_calls, global_arg, quote
from specializer.optimize import int8_layout, requant_proof

CALLEE = "arm_elementwise_add_s8"
KERNEL = "libjit_add_s8"
_ARGS = 16  # v7.0.0's arm_elementwise_add_s8
MIN_LEFT_SHIFT = 16


@dataclass(frozen=True)
class Add:
    output: str  # the call's output buffer
    kernel: str  # the kernel the call now goes to ("" when left alone)
    fast: bool = False
    reason: str = ""

    def log_line(self) -> str:
        if self.kernel:
            form = "the fast form, proven" if self.fast else "arm_nn_requantize"
            return (f"int8 add into {quote(self.output)}: each input's requantization tabulated (2 x 256 int32), "
                    f"calls {quote(self.kernel)} (the sum: {form})")
        return f"int8 add into {quote(self.output)}: left on {CALLEE} ({self.reason})"


def input_table(offset: int, multiplier: int, shift: int, left_shift: int) -> np.ndarray:
    """arm_nn_requantize((v + offset) << left_shift, multiplier, shift) for the int8 value v of
    each byte 0..255 (int32 products wrapping as on the core), int64."""
    byte = np.arange(256, dtype=np.int64)
    v = np.where(byte > 127, byte - 256, byte)
    x = int8_layout.wrap32((v + offset) << left_shift)
    x = int8_layout.wrap32(x << max(shift, 0))  # a positive shift is a left shift first
    return requant_proof.reference(x, multiplier, min(shift, 0))


def _decide(ints: list[int]) -> tuple[list[int], list[int], list[int], bool] | str:
    """(table a, table b, rq record, fast) for the call's constants, or why not."""
    off1, m1, s1, off2, m2, s2, left = ints[:7]
    out_off, out_m, out_s, lo, hi = ints[7:]
    if not MIN_LEFT_SHIFT <= left <= 31:
        return f"left shift {left} outside [{MIN_LEFT_SHIFT}, 31] (CMSIS-NN's DSP path differs below it)"
    if not all(-31 <= s <= 30 for s in (s1, s2, out_s)) or not all(0 <= m < 1 << 31 for m in (m1, m2, out_m)):
        return "a multiplier or shift out of CMSIS-NN's range"
    ta, tb = input_table(off1, m1, s1, left), input_table(off2, m2, s2, left)
    lo_sum, hi_sum = int(ta.min() + tb.min()), int(ta.max() + tb.max())
    if lo_sum < -(1 << 31) or hi_sum >= 1 << 31:
        return "the sum of the requantized inputs may pass int32"
    form = requant_proof.fast_form(out_m, out_s, 0, out_off, lo_sum, hi_sum)
    doubled_fit = max(abs(int(t.min())) for t in (ta, tb)) < 1 << 30 and max(int(t.max()) for t in (ta, tb)) < 1 << 30
    if form is None or not doubled_fit:  # the fast form reads the tables doubled: each entry too
        return ta.tolist(), tb.tolist(), [0, out_m, out_s, 0], False
    return (2 * ta).tolist(), (2 * tb).tolist(), [0, form.multiplier, form.k, form.rs], True


def adds(text: str, skipped) -> tuple[str, tuple[Add, ...]]:
    """The rule (module docstring) on every add call of `text` that `skipped(line)` does not name."""
    lines = text.split("\n")
    notes, new, named = [], [], {}
    for call in list(direct_calls(lines, (CALLEE,))):
        args = call.args
        if len(args) != _ARGS or skipped(lines[call.line]):
            continue
        out = global_arg(args[9]) or args[9]
        inputs, output = call.ints(2, 7), call.ints(10, 5)
        if inputs is None or output is None:
            notes.append(Add(out, "", reason="parameters not constants"))
            continue
        consts = inputs + output
        got = _decide(consts)
        if isinstance(got, str):
            notes.append(Add(out, "", reason=got))
            continue
        ta, tb, rq, fast = got
        key = tuple(consts)
        if key not in named:  # calls with the same constants share their tables
            named[key] = f"libjit.add.{len(named)}"
            new += [int8_layout.constant_array(named[key] + ".a", "i32", ta),
                    int8_layout.constant_array(named[key] + ".b", "i32", tb),
                    int8_layout.constant_array(named[key] + ".rq", "i32", rq)]
        out_off, lo, hi = consts[7], consts[10], consts[11]
        mode = 0 if not fast else 1 if requant_proof.sign_step_needed(out_off, (lo, hi)) else 2
        kargs = [args[9], args[0], args[1], *(f"ptr {quote(named[key] + part)}" for part in (".a", ".b", ".rq")),
                 f"i32 {mode}", f"i32 {out_off}", f"i32 {lo}", f"i32 {hi}", args[15]]
        line = lines[call.line]
        lines[call.line] = line[:call.start] + f"call i32 {quote(KERNEL)}({', '.join(kargs)})" + line[call.end:]
        notes.append(Add(out, KERNEL, fast))
    if not named:
        return text, tuple(notes)
    new.append(f"declare i32 {quote(KERNEL)}({', '.join(['ptr'] * 6 + ['i32'] * 5)})")
    return "\n".join(lines).rstrip("\n") + "\n\n" + "\n".join(new) + "\n", tuple(notes)
