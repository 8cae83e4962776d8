"""The all-args int8 conv rule: weights known at compile time, stored widened for SMLAD.

A CMSIS-NN conv call (the wrapper, the forms it picks, or arm_convolve_s8 without upscaling;
batch 1) or fully connected call (a 1x1 conv over its batch rows, without a weight offset) whose
filter, bias, quantization and parameters are constant globals calls ``libjit_conv_s8``
(libkernels/conv_s8.c) instead -- and so does an arm_convolve_s4 / arm_fully_connected_s4 call
(int4 weights, packed) within the flash it may take (_unpacked: its weights unpacked into int8
panels) --, with:

* the weights as int16 pairs in the order SXTB16 widens the input (taps 0/2, then 1/3 of each
  group of four), two output channels interleaved: the kernel never widens a weight (a new
  constant global, twice the int8 weight's bytes); for one output pixel (a dense layer at batch 1)
  four output channels, two pairs' panels a group of each in turn (_quads), int16 or int8;
* int8 panels (a layer past the `widen` budget, or one pixel) in the packed form where the
  compiler proves it exact for every input (_packable, _packed): two channels' sums from one
  word with one AND (one pixel: as fast as int16 panels);
* per-channel records (int8_layout.py): the input offset folded into the bias, the
  requantization in the fast form where requant_proof shows it equal, else CMSIS-NN's;
* the output channels whose value is the same for every input (int8_layout.constant_channels)
  left out of the panels and records: the kernel writes their values into each output pixel
  from a constant row and computes the others, stored through an index array;
* one scratch shared by every such call of the module: three pixels' taps (two for a layer of
  two pixels, one for one pixel) widened to int16 (6 x k bytes), after, for
  any filter but 1x1 without padding, their gathered int8 windows (3 x k bytes, the input zero
  point in the padding): Shape.cols_bytes.

Sums are integers (no overflow for the kernels' sizes: checked by the fast form's bounds) and the
requantization is CMSIS-NN's or proven equal: results are bit-exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specializer.llvm.irtext import direct_calls, global_arg, quote
from specializer.optimize import int8_layout

FC = "arm_fully_connected_s8"
FC4 = "arm_fully_connected_s4"
FORMS = {"arm_convolve_wrapper_s8": 11, "arm_convolve_1x1_s8_fast": 11, "arm_convolve_1x1_s8": 11,
         "arm_convolve_1_x_n_s8": 11, "arm_convolve_s8": 12, FC: 11,
         "arm_convolve_s4": 11, FC4: 11}  # callee -> arguments (12: upscale_dims at 9); _s4: int4 weights
KERNEL = "libjit_conv_s8"
DEFAULT_WIDEN = 0.5
DEFAULT_UNPACK4 = 1.0
WIDEN_ALWAYS = 8 * 1024  # int8 weight bytes widened whatever `widen` says (when it is > 0): with packed
# int8 panels (_packed) at 3% of KWS's cycles, 32 KiB held KWS's flash at 1.72x lto's, 8 KiB 1.51x
COLS = "libjit.conv.cols"


@dataclass(frozen=True)
class Conv:
    scope: str  # the call's params global
    callee: str
    kernel: str = ""
    reason: str = ""
    weight_bytes: tuple[int, int] = (0, 0)
    cols_bytes: int = 0
    fast: bool = False
    narrow: bool = False
    packed: bool = False
    constant: tuple[int, int] = (0, 0)  # output channels constant for every input, of all

    def log_line(self) -> str:
        if self.kernel:
            cols = f", a {self.cols_bytes}-byte column scratch" if self.cols_bytes else ""
            if self.constant[0]:
                cols += (f", {self.constant[0]} of {self.constant[1]} output channels the same value for every "
                         "input (written, not computed)")
            panels = ("int8 panels (packed: two channels' sums from one word)" if self.packed else
                      "int8 panels (widened in the loop)" if self.narrow else "weights widened to int16 SMLAD pairs")
            return (f"int8 conv {quote(self.scope)}: constant weights, calls {quote(self.kernel)} ({panels} "
                    f"{self.weight_bytes[0]} -> {self.weight_bytes[1]} bytes, input offset "
                    f"folded into the bias{cols}, requantization "
                    f"{'SMMULR (proven equal for every channel)' if self.fast else 'arm_nn_requantize'})")
        return f"int8 conv {quote(self.scope)}: left on {self.callee} ({self.reason})"


@dataclass(frozen=True)
class Shape:
    in_h: int
    in_w: int
    in_c: int
    out_c: int
    kh: int
    kw: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_left: int
    dil_h: int
    dil_w: int
    out_h: int
    out_w: int

    @property
    def k(self) -> int:
        return self.kh * self.kw * self.in_c

    @property
    def direct(self) -> bool:
        """1x1 without padding: the kernel reads each pixel's taps where they are."""
        return self.kh == 1 and self.kw == 1 and self.pad_top == 0 and self.pad_left == 0

    def cols_bytes(self) -> int:
        """The kernel's scratch: the gathered int8 windows (unless direct), then their taps
        widened to int16; of three pixels where there are three or more, of the one pixel (four
        channels a step), else of two (libkernels/conv_s8.c)."""
        n = 3 if self.k >= 4 and self.out_h * self.out_w >= 3 else 1 if self.single else 2
        return (0 if self.direct else (n * self.k + 3) // 4 * 4) + 8 * n * (self.k // 4)

    @property
    def single(self) -> bool:
        """One output pixel (a dense layer at batch 1): the kernel takes four output channels a
        step."""
        return self.out_h * self.out_w == 1


@dataclass(frozen=True)
class Args(int8_layout.KernelArgs):
    """libjit_conv_s8's arguments for one layer (libjit_s8.h): int16 panels, or int8 when narrow."""
    shape: Shape
    narrow: bool
    live: int  # output channels computed: all, or those not in `fill`
    index: np.ndarray | None  # int16: each computed channel's place in the output (None: in order)
    fill: np.ndarray | None  # int8 [out_c]: the constant channels' values (the others 0), or None
    packed: bool = False  # int8 panels in the packed form (_packed)

    def cols_bytes(self) -> int:
        return self.shape.cols_bytes()

    def pointer_arrays(self) -> list[tuple[str, np.ndarray | None]]:
        """The array arguments after the scratch, in the kernel's order (None: a null pointer)."""
        return [("index", self.index), ("fill", self.fill)]

    def ints(self) -> list[int]:
        """The i32 arguments after the seven pointers, in the kernel's order."""
        s = self.shape
        return [s.in_h, s.in_w, s.in_c, s.out_c, self.live, s.kh, s.kw, s.stride_h, s.stride_w, s.pad_top, s.pad_left,
                s.dil_h, s.dil_w, s.out_h, s.out_w, self.pad_value, self.fast_mode(),
                2 if self.packed else int(self.narrow), self.out_offset, *self.act]


def arguments(shape: Shape, w: np.ndarray, bias: list[int], mult: list[int], shift: list[int], in_off: int,
              out_off: int, act: tuple[int, int], narrow: bool = False) -> Args:
    """The kernel's arguments for a layer: w [out_c][kh][kw][in_c] int8 values, CMSIS-NN's
    parameters; narrow: int8 panels (the weights' own bytes, widened in the loop)."""
    taps = np.asarray(w, np.int64).reshape(shape.out_c, shape.k)
    values = int8_layout.constant_channels(taps, bias, mult, shift, in_off, out_off, act)
    live = [c for c, v in enumerate(values) if v is None]
    index = fill = None
    if len(live) < shape.out_c:
        index, fill = np.array(live, np.int16), np.array([v or 0 for v in values], np.int8)
        taps, bias, mult, shift = taps[live], *([x[c] for c in live] for x in (bias, mult, shift))
    fast, rq = int8_layout.requant_records(taps, bias, mult, shift, in_off, out_off)
    if narrow:
        if fast:  # the kernel doubles the sum itself: the records start from the bias
            rq[0::4] = [b // 2 for b in rq[0::4]]
        panels = _narrow_panels(taps)
    else:
        panels = _panels(taps * (2 if fast else 1))
    packed = narrow and shape.out_h * shape.out_w != 2 and _packable(taps)  # quads and triples
    if packed:
        panels = _packed(panels, shape.k)
    if shape.single:
        panels = _quads(panels, len(taps), shape.k)
    return Args(panels, rq, fast, -in_off, out_off, act, shape, narrow, len(live), index, fill, packed)


@dataclass(frozen=True)
class Layer:
    """A conv or dense call's constants as read, before they are laid out (int16 or int8 panels:
    decided over all the calls, _narrowed)."""
    shape: Shape
    constants: int8_layout.Constants
    in_off: int
    out_off: int
    act: tuple[int, int]
    int4: bool = False  # an s4 call's: its weights were packed two a byte

    def packs(self) -> bool:
        """One pixel whose int8 panels take the packed form: as fast as int16 panels, so it
        never takes the flash they would."""
        taps = np.asarray(self.constants.weights, np.int64).reshape(self.shape.out_c, -1)
        return self.shape.single and _packable(taps)

    def arguments(self, narrow: bool) -> Args:
        k = self.constants
        return arguments(self.shape, k.weights, k.bias, k.mult, k.shift, self.in_off, self.out_off, self.act, narrow)


def _panels(taps: np.ndarray) -> np.ndarray:
    """[out_c][k] -> per output-channel pair: per group of 4 taps (t0,t2),(t1,t3) of o then of o+1;
    then the k % 4 last taps as (o, o+1) pairs (libkernels/conv_s8.c)."""
    out_c, k = taps.shape
    if not out_c:  # every channel constant: nothing to compute
        return np.zeros(0, np.int16)
    if out_c % 2:
        taps = np.concatenate([taps, np.zeros((1, k), np.int64)])
    pairs, groups = taps.shape[0] // 2, k // 4
    main = taps[:, :4 * groups].reshape(pairs, 2, groups, 4)[:, :, :, [0, 2, 1, 3]].transpose(0, 2, 1, 3)
    tail = taps[:, 4 * groups:].reshape(pairs, 2, k - 4 * groups).transpose(0, 2, 1)
    return np.concatenate([main.reshape(pairs, -1), tail.reshape(pairs, -1)], axis=1).reshape(-1).astype(np.int16)


def _pair_bytes(k: int) -> int:
    """The bytes of one channel pair's int8 panel (_narrow_panels, _packed): 2 k, whole words."""
    return 2 * k + -(2 * (k % 4)) % 4


def _narrow_panels(taps: np.ndarray) -> np.ndarray:
    """[out_c][k] -> int8, per output-channel pair: per group of 4 taps (o t0, o+1 t0, o t2, o+1 t2),
    (o t1, o+1 t1, o t3, o+1 t3) (one word's SXTB16 is o's pair, rotated by 8 o+1's); then the k % 4
    last taps as (o, o+1) pairs; each pair's panel padded to whole words."""
    out_c, k = taps.shape
    if not out_c:
        return np.zeros(0, np.int8)
    if out_c % 2:
        taps = np.concatenate([taps, np.zeros((1, k), np.int64)])
    pairs, groups = taps.shape[0] // 2, k // 4
    main = taps[:, :4 * groups].reshape(pairs, 2, groups, 4)[:, :, :, [0, 2, 1, 3]].reshape(pairs, 2, groups, 2, 2)
    main = main.transpose(0, 2, 3, 4, 1).reshape(pairs, -1)  # [pair][group][half][tap of the half][channel]
    tail = taps[:, 4 * groups:].reshape(pairs, 2, k - 4 * groups).transpose(0, 2, 1).reshape(pairs, -1)
    pad = np.zeros((pairs, -(2 * (k - 4 * groups)) % 4), np.int64)
    return np.concatenate([main, tail, pad], axis=1).reshape(-1).astype(np.int8)


PACKED_BOUND = (1 << 23) - 1  # the largest |sum| the packed form recovers from its high bytes


def _packable(taps: np.ndarray) -> bool:
    """Whether every channel's sum over the groups' taps stays within PACKED_BOUND for any int8
    input (what the packed form needs to recover it exactly, _packed)."""
    groups = taps.shape[1] // 4
    sums = 128 * np.abs(taps[:, :4 * groups]).sum(axis=1)
    return groups > 0 and len(taps) > 0 and bool((sums <= PACKED_BOUND).all())


def _packed(panels: np.ndarray, k: int) -> np.ndarray:
    """_narrow_panels -> the packed form (one pixel or three at a time): in each group's words
    the pair's two channels swap within each half and the second's bytes are offset by 128, so a
    word read as two int16 is (256 w(o) + w(o+1) + 128) per tap. SMLAD with the input pair sums
    256 S(o) + S(o+1) + 128 X, and with the word ANDed with 0x00ff00ff S(o+1) + 128 X: the kernel
    recovers both sums with one AND a word where widening it took two SXTB16 (X, the sum of the
    input's taps, is computed once a pixel). The last k % 4 taps stay as they were."""
    groups = k // 4
    per_pair = panels.astype(np.int64).reshape(-1, _pair_bytes(k))
    # [pair][group][word: taps 0/2, 1/3][tap of the word][channel o, o+1] -> channels swapped
    main = per_pair[:, :8 * groups].reshape(-1, groups, 2, 2, 2)[..., ::-1].copy()
    main[..., 0] += 128  # o+1's, as an unsigned byte
    main = main.reshape(len(per_pair), -1).astype(np.uint8).view(np.int8)
    return np.concatenate([main, per_pair[:, 8 * groups:].astype(np.int8)], axis=1).reshape(-1)


def _quads(panels: np.ndarray, out_c: int, k: int) -> np.ndarray:
    """Pair panels -> the one-pixel kernel's quads: per four output channels (a missing pair
    zeros), a group of each pair's in turn, then the first pair's tail, then the second's."""
    pairs = (out_c + 1) // 2
    if not pairs:
        return panels
    per_pair = panels.reshape(pairs, -1)
    if pairs % 2:
        per_pair = np.concatenate([per_pair, np.zeros_like(per_pair[:1])])
    groups = k // 4
    step = 8  # one group of a pair: taps 0/2 and 1/3 of two channels
    quads = len(per_pair) // 2
    main = per_pair[:, :groups * step].reshape(quads, 2, groups, step).transpose(0, 2, 1, 3)
    tail = per_pair[:, groups * step:].reshape(quads, -1)
    return np.concatenate([main.reshape(quads, -1), tail], axis=1).reshape(-1)


def _read(g: int8_layout.Globals, callee: str, args: list[str]) -> Layer | str:
    """A conv call's constants, or why it cannot have the kernel."""
    int4 = callee.endswith("_s4")
    if callee in (FC, FC4):
        return _read_fc(g, args, int4)
    out_dims = 10 if len(args) == 12 else 9
    if len(args) == 12 and args[9] != "ptr null":
        return "upscaled input (a transposed convolution)"
    params = g.ints(global_arg(args[1]), 10)
    dims = [g.ints(global_arg(args[i]), 4) for i in (3, 5, out_dims)]
    if params is None or None in dims:
        return "parameters or dims not constant globals"
    in_off, out_off, sw, sh, pw, ph, dw, dh, act_min, act_max = params
    (n, in_h, in_w, in_c), (out_c, kh, kw, fc), (on, out_h, out_w, oc) = dims
    if n != 1 or on != 1:
        return f"batch {n}"
    if fc != in_c or oc != out_c:
        return f"grouped: filter depth {fc}, input channels {in_c}"
    k = int8_layout.constants(g, args, out_c, out_c * kh * kw * in_c, int4=int4)
    if isinstance(k, str):
        return k
    shape = Shape(in_h, in_w, in_c, out_c, kh, kw, sh, sw, ph, pw, dh, dw, out_h, out_w)
    return Layer(shape, k, in_off, out_off, (act_min, act_max), int4)


def _read_fc(g: int8_layout.Globals, args: list[str], int4: bool) -> Layer | str:
    """A fully connected layer as a 1x1 conv over its batch rows (weights [out][in], as a 1x1
    filter's), one multiplier and shift for every output."""
    params = g.ints(global_arg(args[1]), 5)
    dims = [g.ints(global_arg(args[i]), 4) for i in (3, 5, 9)]
    if params is None or None in dims:
        return "parameters or dims not constant globals"
    in_off, w_off, out_off, act_min, act_max = params
    (batch, *_), (depth, _, _, out_c), (out_batch, *_, oc) = dims
    if w_off:
        return f"weight offset {w_off}"
    if out_batch != batch or oc != out_c:
        return f"output dims {dims[2]}"
    k = int8_layout.constants(g, args, out_c, out_c * depth, per_tensor=True, int4=int4)
    if isinstance(k, str):
        return k
    shape = Shape(batch, 1, depth, out_c, 1, 1, 1, 1, 0, 0, 1, 1, batch, 1)
    return Layer(shape, k, in_off, out_off, (act_min, act_max), int4)


def _narrowed(found: list[tuple[int, Layer]], widen: float, floor: int = WIDEN_ALWAYS) -> set[int]:
    """Which calls get int8 panels: int16 panels double a layer's weight bytes, so they go to the
    layers that reuse each weight most (most output pixels) while their int8 bytes stay within
    `widen` times those of all the calls in `found`, or `floor` bytes (widen > 0); the rest keep
    their weights' own bytes. (int8 panels also unroll into more code: a small model's flash is
    code.)"""
    total = sum(a.shape.out_c * a.shape.k for _, a in found)
    allowed = max(widen * total, floor) if widen > 0 else 0
    order = sorted(found, key=lambda f: (-f[1].shape.out_h * f[1].shape.out_w, f[0]))
    narrow, used = set(), 0
    for i, a in order:
        size = a.shape.out_c * a.shape.k
        if used + size <= allowed:
            used += size
        else:
            narrow.add(i)
    return narrow


def _unpacked(found: list[tuple[int, Layer]], unpack4: float) -> set[int]:
    """Which s4 calls get the kernel: their weights unpacked into int8 panels (twice their packed
    bytes), to the layers that reuse each weight most (most output pixels), while the panels stay
    within `unpack4` times the packed bytes of all the s4 calls; the rest keep their packed
    weights and the s4 function (the user chose int4 for flash)."""
    allowed = unpack4 * sum((a.shape.out_c * a.shape.k + 1) // 2 for _, a in found)
    order = sorted(found, key=lambda f: (-f[1].shape.out_h * f[1].shape.out_w, f[0]))
    taken, used = set(), 0
    for i, a in order:
        k = a.shape.k
        size = (a.shape.out_c + 1) // 2 * _pair_bytes(k)
        if used + size <= allowed:
            used += size
            taken.add(i)
    return taken


def convs(text: str, skipped, widen: float = DEFAULT_WIDEN,
          unpack4: float = DEFAULT_UNPACK4) -> tuple[str, tuple[Conv, ...]]:
    """The rule (module docstring) on every conv call of `text` that `skipped(line)` does not name;
    int16 panels for at most `widen` times the weight bytes of the s8 calls it takes (_narrowed),
    a one-pixel layer in the packed form aside (int8 panels whatever the budget, its bytes not in
    the budget's total: int16 would not be faster); an s4 call's weights unpacked into int8 panels
    for at most `unpack4` times the s4 calls' packed bytes (_unpacked), the others left on their
    s4 function."""
    lines = text.split("\n")
    g = int8_layout.Globals(lines)
    notes: list[Conv | None] = []
    found: list[tuple[int, Layer]] = []
    calls = []
    for call in list(direct_calls(lines, tuple(FORMS))):
        args = call.args
        if len(args) != FORMS[call.callee] or skipped(lines[call.line]):
            continue
        scope = global_arg(args[1]) or args[1]
        layer = _read(g, call.callee, args)
        if isinstance(layer, str):
            notes.append(Conv(scope, call.callee, reason=layer))
            continue
        found.append((len(notes), layer))
        calls.append((len(notes), call, scope))
        notes.append(None)
    packs = {i for i, layer in found if layer.packs()}
    narrow = _narrowed([f for f in found if not f[1].int4 and f[0] not in packs], widen) | packs
    four = [f for f in found if f[1].int4]
    unpacked = _unpacked(four, unpack4)
    narrow |= unpacked  # int8 panels: the int4 weights' flash at most doubled
    new, cols, named = [], 0, {}
    for (i, layer), (_, call, scope) in zip(found, calls):
        if layer.int4 and i not in unpacked:
            notes[i] = Conv(scope, call.callee, reason=f"int4 weights kept packed: unpacked they would pass "
                            f"{unpack4:g} x the s4 calls' packed bytes (relayout's unpack4)")
            continue
        got = layer.arguments(i in narrow)
        args, s = call.args, got.shape
        cols = max(cols, got.cols_bytes())
        key = (got.narrow, *(a for j, a in enumerate(args) if j not in (4, len(args) - 1)))  # not in/out
        if key not in named:
            named[key] = f"libjit.conv.{len(named)}"
            new += [int8_layout.constant_array(named[key] + ".w", "i8" if got.narrow else "i16", got.weights.tolist()),
                    int8_layout.constant_array(named[key] + ".rq", "i32", got.rq)]
            new += [int8_layout.constant_array(f"{named[key]}.{what}", "i16" if a.dtype == np.int16 else "i8",
                                               a.tolist()) for what, a in got.pointer_arrays() if a is not None]
        scratch = f"ptr {quote(COLS)}" if got.cols_bytes() else "ptr null"  # k < 4: nothing widened
        arrays = [f"ptr {quote(f'{named[key]}.{what}')}" if a is not None else "ptr null"
                  for what, a in got.pointer_arrays()]
        kargs = [args[-1], args[4], f"ptr {quote(named[key] + '.w')}", f"ptr {quote(named[key] + '.rq')}", scratch,
                 *arrays, *(f"i32 {v}" for v in got.ints())]
        line = lines[call.line]
        lines[call.line] = line[:call.start] + f"call i32 {quote(KERNEL)}({', '.join(kargs)})" + line[call.end:]
        packed = (s.out_c * s.k + 1) // 2 if layer.int4 else s.out_c * s.k
        notes[i] = Conv(scope, call.callee, KERNEL, weight_bytes=(packed, got.weights.nbytes),
                        cols_bytes=got.cols_bytes(), fast=got.fast, narrow=got.narrow, packed=got.packed,
                        constant=(s.out_c - got.live, s.out_c))
    if not any(n.kernel for n in notes):
        return text, tuple(notes)
    if cols:
        new.append(f"{quote(COLS)} = internal global [{cols} x i8] zeroinitializer, align 4")
    new.append(f"declare i32 {quote(KERNEL)}({', '.join(['ptr'] * 7 + ['i32'] * 21)})")
    return "\n".join(lines).rstrip("\n") + "\n\n" + "\n".join(new) + "\n", tuple(notes)
