"""Lower the ops XLA leaves to its runtime (dots, convolutions) onto libjit kernel calls.

Each op becomes one `LibCall` whose buffers are slices of XLA's allocations and whose shapes
are constant i32 arguments: the call shape a specializer works on. The kernels' C ABI lives in
libkernels/libjit_f32.h and libkernels/libjit_s8.h; what is refused here is named, with its
shape and dtype, rather than computed wrongly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specializer.errors import UserError
from specializer.capture.thunks import LibCall, Scratch, Slice

# (lhs, rhs, out) element types -> kernel
DOT_KERNELS = {("f32", "f32", "f32"): "libjit_matmul_f32", ("s8", "s8", "s32"): "libjit_matmul_s8_s32",
               # wrapping 32-bit sums: signed and unsigned give the same bits
               ("s32", "s32", "s32"): "libjit_matmul_s32", ("u32", "u32", "u32"): "libjit_matmul_s32"}
CONV_KERNELS = {("f32", "f32", "f32"): "libjit_conv2d_f32"}
# a convolution of a dilated input (a transposed convolution) -> its own kernel, no scratch
TRANSPOSED_CONV_KERNELS = {"libjit_conv2d_f32": "libjit_conv_transpose2d_f32"}
# a depthwise convolution with channel multiplier 2 or 4 -> its own kernel, no scratch (the
# general kernel reloads each input value once per output channel it feeds)
DEPTHWISE_MULT_KERNELS = {"libjit_conv2d_f32": "libjit_dwconv_mult_f32"}
DEPTHWISE_MULTS = (2, 4)


@dataclass(frozen=True)
class Operand:
    """A buffer XLA hands a runtime op: where it is and its shape with layout."""
    slice: Slice
    dtype: str
    dims: tuple[int, ...]
    minor_to_major: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.dims))}]{{{','.join(map(str, self.minor_to_major))}}}"


def _physical(op: Operand) -> list[int]:
    """Logical dimension numbers from major to minor, size-1 dimensions dropped (they never
    change addresses, so a [1,K] row and a [K,1] column are the same memory)."""
    return [d for d in reversed(op.minor_to_major) if op.dims[d] != 1]


def _size(op: Operand, dims) -> int:
    return math.prod(op.dims[d] for d in dims)


def _split(op: Operand, batch, contracting):
    """(free dims, transposed?) if the operand is [batch][rows][cols] in memory, else None.

    Not transposed means the free dims come before the contracting dims (rows x cols =
    free x contracting for lhs); transposed means the opposite."""
    free = [d for d in range(len(op.dims)) if d not in batch and d not in contracting]
    phys = _physical(op)
    want_b = [d for d in batch if op.dims[d] != 1]
    want_c = [d for d in contracting if op.dims[d] != 1]
    want_f = [d for d in free if op.dims[d] != 1]
    if phys[:len(want_b)] != want_b:
        return None
    rest = phys[len(want_b):]
    if rest == want_f + want_c:
        return free, False
    if rest == want_c + want_f:
        return free, True
    return None


def lower_dot(op_name: str, lhs: Operand, rhs: Operand, out: Operand, dims: dict) -> LibCall:
    """dot_general -> libjit_matmul_*(out, lhs, rhs, batch, m, k, n, lhs_transposed, rhs_transposed)."""
    types = (lhs.dtype, rhs.dtype, out.dtype)

    def refuse(why: str) -> UserError:
        return UserError(f"unsupported op: dot '{op_name}' ({lhs} x {rhs} -> {out}): {why}")

    kernel = DOT_KERNELS.get(types)
    if kernel is None:
        have = ", ".join(f"{a} x {b} -> {c}" for a, b, c in DOT_KERNELS)
        raise refuse(f"no libjit kernel for these element types (have: {have})")
    lb, rb = dims["lhs_batch"], dims["rhs_batch"]
    lc, rc = dims["lhs_contracting"], dims["rhs_contracting"]
    ls = _split(lhs, lb, lc)
    # the rhs stored [k][n] is "not transposed": contracting before free
    rs = _split(rhs, rb, rc)
    if ls is None or rs is None:
        raise refuse("operand layout is not [batch][rows][cols]")
    (lfree, lhs_t), (rfree, rhs_kn) = ls, rs
    rhs_t = not rhs_kn  # _split calls [k][n] (contracting first) transposed; for rhs it is the plain form
    batch, m, k, n = _size(lhs, lb), _size(lhs, lfree), _size(lhs, lc), _size(rhs, rfree)
    if _size(rhs, rb) != batch or _size(rhs, rc) != k:
        raise refuse("batch or contracting sizes differ")
    # XLA's dot result is [batch..., lhs free..., rhs free...] and must be row-major in that order
    expect = [d for d in range(len(out.dims)) if out.dims[d] != 1]
    if _physical(out) != expect or math.prod(out.dims) != batch * m * n:
        raise refuse("result layout is not row-major [batch][m][n]")
    return LibCall(kernel, (out.slice, lhs.slice, rhs.slice, batch, m, k, n, int(lhs_t), int(rhs_t)))


def conv_scratch_floats(out_w: int, k_h: int, k_w: int, cin_per_group: int) -> int:
    """Scratch libjit_conv2d_f32 needs: one output row's im2col patch matrix
    (LIBJIT_CONV2D_SCRATCH_FLOATS in libkernels/libjit_f32.h)."""
    return out_w * k_h * k_w * cin_per_group


def lower_conv(op_name: str, inp: Operand, kernel: Operand, out: Operand, dn: dict, window: tuple,
               groups: int) -> LibCall:
    """convolution (NHWC input, HWIO filter, NHWC output; 1 or 2 spatial dims) -> libjit_conv2d_*,
    libjit_conv_transpose2d_* for a dilated input or a reversed window, libjit_dwconv_mult_* for a
    depthwise one with channel multiplier 2 or 4."""
    def refuse(why: str) -> UserError:
        return UserError(f"unsupported op: convolution '{op_name}' ({inp} * {kernel} -> {out}): {why}")

    fn = CONV_KERNELS.get((inp.dtype, kernel.dtype, out.dtype))
    if fn is None:
        raise refuse("no libjit kernel for these element types (have: f32)")
    ns = len(dn["input_spatial"])
    if ns not in (1, 2) or len(window) != ns:
        raise refuse(f"{ns} spatial dimensions (libjit has 1-D and 2-D convolutions)")
    # canonical forms: batch, spatial..., feature (row-major), and spatial..., in, out
    nhwc = dict(batch=0, spatial=tuple(range(1, ns + 1)), feature=ns + 1)
    if (dn["input_batch"], dn["input_spatial"], dn["input_feature"]) != tuple(nhwc.values()) or \
       (dn["output_batch"], dn["output_spatial"], dn["output_feature"]) != tuple(nhwc.values()) or \
       (dn["kernel_spatial"], dn["kernel_input_feature"], dn["kernel_output_feature"]) != \
       (tuple(range(ns)), ns, ns + 1):
        raise refuse("dimension numbers are not NHWC / HWIO / NHWC")
    for op in (inp, kernel, out):
        if tuple(op.minor_to_major) != tuple(reversed(range(len(op.dims)))):
            raise refuse(f"{op} is not row-major")
    win = [dict(w) for w in window]
    if ns == 1:  # a 1-D convolution is a 2-D one with height 1
        win.insert(0, {"size": 1, "stride": 1, "padding_low": 0, "padding_high": 0, "window_dilation": 1,
                       "base_dilation": 1, "window_reversal": False})
    base_dil = [w["base_dilation"] or 1 for w in win]
    reverse = sum(1 << i for i, w in enumerate(win) if w["window_reversal"])
    # a transposed convolution: the input dilated, perhaps the window reversed (and then
    # negative padding is only a window starting inside the input)
    transposed = base_dil != [1, 1] or reverse != 0
    if not transposed and any(w["padding_low"] < 0 or w["padding_high"] < 0 for w in win):
        raise refuse("negative padding")
    in_h, in_w = (inp.dims[1], inp.dims[2]) if ns == 2 else (1, inp.dims[1])
    out_h, out_w = (out.dims[1], out.dims[2]) if ns == 2 else (1, out.dims[1])
    batch, in_c, out_c = inp.dims[0], inp.dims[-1], out.dims[-1]
    k_h, k_w = win[0]["size"], win[1]["size"]
    if in_c % groups or out_c % groups or kernel.dims[-2] * groups != in_c:
        raise refuse(f"feature groups {groups} do not divide the channels")
    dil = [w["window_dilation"] or 1 for w in win]
    stride = [w["stride"] or 1 for w in win]
    if transposed:
        return LibCall(TRANSPOSED_CONV_KERNELS[fn], (
            out.slice, inp.slice, kernel.slice, batch, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w,
            stride[0], stride[1], win[0]["padding_low"], win[1]["padding_low"], dil[0], dil[1], groups,
            base_dil[0], base_dil[1], reverse))
    if groups == in_c and out_c // in_c in DEPTHWISE_MULTS and out_c % in_c == 0:
        return LibCall(DEPTHWISE_MULT_KERNELS[fn], (
            out.slice, inp.slice, kernel.slice, batch, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w,
            stride[0], stride[1], win[0]["padding_low"], win[1]["padding_low"], dil[0], dil[1]))
    scratch = conv_scratch_floats(out_w, k_h, k_w, in_c // groups) * 4
    return LibCall(fn, (out.slice, inp.slice, kernel.slice, Scratch(scratch),
                        batch, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w,
                        stride[0], stride[1], win[0]["padding_low"], win[1]["padding_low"],
                        dil[0], dil[1], groups))
