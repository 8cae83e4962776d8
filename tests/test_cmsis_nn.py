"""cmsis_nn_shim: its compiler intrinsics on the real target, its CMSIS-NN kernels and
libjit_matmul_s8_s32 against numpy (on the host through ctypes, and on QEMU where the DSP paths
run), and the CMSIS-NN checkout option of specializer.library.cmsis / libjit."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from specializer.library import cmsis, cmsis_api, libjit

from specializer.run import qemu
from specializer.errors import UserError
from specializer.tools import find_tool, repo_root

ROOT = repo_root()
SHIM = ROOT / "cmsis_nn_shim"
KERNELS = ROOT / "libkernels"
DATA = Path(__file__).parent / "data" / "cmsis_nn"
M32 = (1 << 32) - 1
M64 = (1 << 64) - 1

SHIM_INCLUDES = [f"-I{SHIM / 'include'}", f"-I{SHIM / 'include' / 'compiler'}", f"-I{KERNELS}"]


# =========================================================================== Python models


def sx(v: int, bits: int) -> int:
    """The low `bits` of v as a signed number."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def lanes(x: int, bits: int) -> list[int]:
    return [(x >> (i * bits)) & ((1 << bits) - 1) for i in range(32 // bits)]


def pack(vals, bits: int) -> int:
    return sum((v & ((1 << bits) - 1)) << (i * bits) for i, v in enumerate(vals))


def sat(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


def ror(x: int, n: int) -> int:
    n &= 31
    return ((x >> n) | (x << (32 - n))) & M32 if n else x


def lane_op(kind: str, bits: int, sub: bool):
    """One lane of S/Q/SH (signed) or U/UQ/UH (unsigned) add or subtract."""
    signed = kind in ("S", "Q", "SH")

    def op(x: int, y: int) -> int:
        x, y = (sx(x, bits), sx(y, bits)) if signed else (x, y)
        r = x - y if sub else x + y
        if kind == "Q":
            return sat(r, -(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        if kind == "UQ":
            return sat(r, 0, (1 << bits) - 1)
        if kind in ("SH", "UH"):
            return r >> 1  # floor, as the halving instructions
        return r

    return op


def lanewise(kind: str, bits: int, sub: bool):
    op = lane_op(kind, bits, sub)
    return lambda a, b: pack([op(x, y) for x, y in zip(lanes(a, bits), lanes(b, bits))], bits)


def exchange(kind: str, asx: bool):
    """ASX: lo = a.lo - b.hi, hi = a.hi + b.lo; SAX: lo = a.lo + b.hi, hi = a.hi - b.lo."""
    add, sub = lane_op(kind, 16, False), lane_op(kind, 16, True)

    def f(a, b):
        (alo, ahi), (blo, bhi) = lanes(a, 16), lanes(b, 16)
        if asx:
            return pack([sub(alo, bhi), add(ahi, blo)], 16)
        return pack([add(alo, bhi), sub(ahi, blo)], 16)

    return f


def halves(x: int) -> tuple[int, int]:
    return sx(x, 16), sx(x >> 16, 16)


def sxtb16(x: int) -> int:
    return pack([sx(x, 8), sx(x >> 16, 8)], 16)


def uxtb16(x: int) -> int:
    return pack([x & 0xFF, (x >> 16) & 0xFF], 16)


def sxtab16(a: int, x: int) -> int:
    alo, ahi = lanes(a, 16)
    return pack([alo + sx(x, 8), ahi + sx(x >> 16, 8)], 16)


def uxtab16(a: int, x: int) -> int:
    alo, ahi = lanes(a, 16)
    return pack([alo + (x & 0xFF), ahi + ((x >> 16) & 0xFF)], 16)


def dual(a: int, b: int, cross: bool, diff: bool) -> int:
    """lo*lo +/- hi*hi, or lo*hi +/- hi*lo (signed halfwords), exact."""
    (alo, ahi), (blo, bhi) = halves(a), halves(b)
    p, q = (alo * bhi, ahi * blo) if cross else (alo * blo, ahi * bhi)
    return p - q if diff else p + q


def ssat(v: int, n: int) -> int:
    return sat(v, -(1 << (n - 1)), (1 << (n - 1)) - 1)


def usat(v: int, n: int) -> int:
    return sat(v, 0, (1 << n) - 1)


def half_mul(a: int, b: int, top_a: bool, top_b: bool) -> int:
    return halves(a)[top_a] * halves(b)[top_b]


def word_mul(a: int, b: int, top: bool) -> int:
    return (sx(a, 32) * halves(b)[top]) >> 16


UNARY = {
    "SXTB16": sxtb16,
    "UXTB16": uxtb16,
    "SXTB16_RORn_8": lambda a: sxtb16(ror(a, 8)),
    "SXTB16_RORn_16": lambda a: sxtb16(ror(a, 16)),
    "SXTB16_RORn_24": lambda a: sxtb16(ror(a, 24)),
    "CLZ": lambda a: 32 - a.bit_length(),
    "REV": lambda a: int.from_bytes(a.to_bytes(4, "little"), "big"),
    "REV16": lambda a: pack([((h & 0xFF) << 8) | (h >> 8) for h in lanes(a, 16)], 16),
    "REVSH": lambda a: sx(((a & 0xFF) << 8) | ((a >> 8) & 0xFF), 16),
    "RBIT": lambda a: int(f"{a:032b}"[::-1], 2),
    **{f"SSAT_{n}": (lambda n: lambda a: ssat(sx(a, 32), n))(n) for n in (1, 8, 16, 31, 32)},
    **{f"USAT_{n}": (lambda n: lambda a: usat(sx(a, 32), n))(n) for n in (0, 7, 8, 15, 31)},
    **{f"SSAT16_{n}": (lambda n: lambda a: pack([ssat(h, n) for h in halves(a)], 16))(n) for n in (1, 8, 16)},
    **{f"USAT16_{n}": (lambda n: lambda a: pack([usat(h, n) for h in halves(a)], 16))(n) for n in (0, 7, 15)},
}

BINARY = {
    **{f"{k}{op}{bits}": lanewise(k, bits, op == "SUB")
       for k in ("S", "Q", "SH", "U", "UQ", "UH") for op in ("ADD", "SUB") for bits in (8, 16)},
    **{f"{k}{x}": exchange(k, x == "ASX") for k in ("S", "Q", "SH", "U", "UQ", "UH") for x in ("ASX", "SAX")},
    "USAD8": lambda a, b: sum(abs(x - y) for x, y in zip(lanes(a, 8), lanes(b, 8))),
    "SMUAD": lambda a, b: dual(a, b, False, False),
    "SMUADX": lambda a, b: dual(a, b, True, False),
    "SMUSD": lambda a, b: dual(a, b, False, True),
    "SMUSDX": lambda a, b: dual(a, b, True, True),
    "SMULBB": lambda a, b: half_mul(a, b, False, False),
    "SMULBT": lambda a, b: half_mul(a, b, False, True),
    "SMULTB": lambda a, b: half_mul(a, b, True, False),
    "SMULTT": lambda a, b: half_mul(a, b, True, True),
    "SMULWB": lambda a, b: word_mul(a, b, False),
    "SMULWT": lambda a, b: word_mul(a, b, True),
    "SXTAB16": sxtab16,
    "UXTAB16": uxtab16,
    "SXTB16_RORn": lambda a, b: sxtb16(ror(a, b)),
    "SXTAB16_RORn_8": lambda a, b: sxtab16(a, ror(b, 8)),
    "SXTAB16_RORn_24": lambda a, b: sxtab16(a, ror(b, 24)),
    "QADD": lambda a, b: ssat(sx(a, 32) + sx(b, 32), 32),
    "QSUB": lambda a, b: ssat(sx(a, 32) - sx(b, 32), 32),
    "ROR": ror,
    **{f"PKHBT_{s}": (lambda s: lambda a, b: (a & 0xFFFF) | ((b << s) & 0xFFFF0000))(s) for s in (0, 8, 16, 31)},
    **{f"PKHTB_{s}": (lambda s: lambda a, b: (a & 0xFFFF0000) | ((sx(b, 32) >> s) & 0xFFFF))(s) for s in (0, 1, 8, 16)},
}

TERNARY = {
    "SMLAD": lambda a, b, c: c + dual(a, b, False, False),
    "SMLADX": lambda a, b, c: c + dual(a, b, True, False),
    "SMLSD": lambda a, b, c: c + dual(a, b, False, True),
    "SMLSDX": lambda a, b, c: c + dual(a, b, True, True),
    "SMLABB": lambda a, b, c: c + half_mul(a, b, False, False),
    "SMLABT": lambda a, b, c: c + half_mul(a, b, False, True),
    "SMLATB": lambda a, b, c: c + half_mul(a, b, True, False),
    "SMLATT": lambda a, b, c: c + half_mul(a, b, True, True),
    "SMLAWB": lambda a, b, c: c + word_mul(a, b, False),
    "SMLAWT": lambda a, b, c: c + word_mul(a, b, True),
    "USADA8": lambda a, b, c: c + BINARY["USAD8"](a, b),
    "SMMLA": lambda a, b, c: ((sx(c, 32) << 32) + sx(a, 32) * sx(b, 32)) >> 32,
    "SXTAB16_RORn": lambda a, b, c: sxtab16(a, ror(b, c)),
}

ACC64 = {
    "SMLALD": lambda a, b, acc: acc + dual(a, b, False, False),
    "SMLALDX": lambda a, b, acc: acc + dual(a, b, True, False),
    "SMLSLD": lambda a, b, acc: acc + dual(a, b, False, True),
    "SMLSLDX": lambda a, b, acc: acc + dual(a, b, True, True),
}

UNALIGNED_BYTES = bytes([0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,
                         0xF0, 0xE1, 0xD2, 0xC3, 0xB4, 0xA5, 0x96, 0x87])  # fmt: skip


# --- CMSIS-NN's requantization (arm_nn_requantize, default double rounding), vectorized


def wrap32(v):
    v = np.asarray(v, dtype=np.int64) & M32
    return np.where(v >= 1 << 31, v - (1 << 32), v)


def requantize(acc, mult, shift):
    acc, mult, shift = (np.asarray(x, dtype=np.int64) for x in (acc, mult, shift))
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    x = wrap32(acc << left)
    high = wrap32((x * mult + (1 << 30)) >> 31)  # doubling high multiply, ties toward +inf
    mask = (np.int64(1) << right) - 1
    result = high >> right
    threshold = (mask >> 1) + (result < 0)  # rounding divide: ties away from zero
    return result + ((high & mask) > threshold)


def requantize_scalar(v: int, mult: int, shift: int) -> int:
    x = sx(v << max(shift, 0), 32)
    high = sx((x * mult + (1 << 30)) >> 31, 32)
    right = max(-shift, 0)
    mask = (1 << right) - 1
    result = high >> right
    threshold = (mask >> 1) + (1 if result < 0 else 0)
    return result + (1 if (high & mask) > threshold else 0)


# =========================================================================== references


def ref_matmul(lhs, rhs, batch, m, k, n, lt, rt):
    L = lhs.reshape(batch, k, m).transpose(0, 2, 1) if lt else lhs.reshape(batch, m, k)
    R = rhs.reshape(batch, n, k).transpose(0, 2, 1) if rt else rhs.reshape(batch, k, n)
    return wrap32(np.einsum("bik,bkj->bij", L.astype(np.int64), R.astype(np.int64))).astype(np.int32)


def ref_nt_t(lhs, rhs, dst, m, k, n, lhs_offset, dio):
    acc = (lhs.reshape(m, k).astype(np.int64) + lhs_offset) @ rhs.reshape(n, k).astype(np.int64).T
    out = dst.astype(np.int64).copy()
    idx = (np.arange(m)[:, None] * n + np.arange(n)[None, :]) * dio
    out[idx] = wrap32(out[idx] + acc)
    return out.astype(np.int32)


def finish(acc, bias, mult, shift, out_off, act):
    if bias is not None:
        acc = acc + bias
    v = requantize(wrap32(acc), mult, shift) + out_off
    return np.clip(v, act[0], act[1]).astype(np.int8)


def ref_fc(c):
    acc = (c["inp"].astype(np.int64) + c["in_off"]) @ (c["w"].astype(np.int64) + c["w_off"]).T
    return finish(acc, c["bias"], c["mult"], c["shift"], c["out_off"], c["act"])


def upscaled(c) -> np.ndarray:
    """The input arm_convolve_s8 sees under upscale_dims {h, w}: data row r at row r*h, the
    rows / columns in between the zero point (-input_offset)."""
    uh, uw = c["up"] or (1, 1)
    nb, ih, iw, ic = c["inp"].shape
    out = np.full((nb, ih * uh, iw * uw, ic), -c["in_off"], np.int64)
    out[:, ::uh, ::uw] = c["inp"]
    return out


def ref_conv(c):
    inp, filt = upscaled(c), c["filt"].astype(np.int64)
    nb, ih, iw, ic = inp.shape
    oc, kh, kw, ck = filt.shape
    oh, ow = c["out_hw"]
    (sh, sw), (ph, pw), (dh, dw) = c["stride"], c["pad"], c["dil"]
    groups = ic // ck
    mg = oc // groups
    acc = np.zeros((nb, oh, ow, oc), np.int64)
    for oy in range(oh):
        for ox in range(ow):
            for ky in range(kh):
                for kx in range(kw):
                    iy, ix = oy * sh - ph + ky * dh, ox * sw - pw + kx * dw
                    if not (0 <= iy < ih and 0 <= ix < iw):
                        continue
                    for g in range(groups):
                        x = inp[:, iy, ix, g * ck:(g + 1) * ck] + c["in_off"]
                        acc[:, oy, ox, g * mg:(g + 1) * mg] += x @ filt[g * mg:(g + 1) * mg, ky, kx, :].T
    return finish(acc, c["bias"], c["mult"], c["shift"], c["out_off"], c["act"])


def ref_dw(c):
    """Depthwise: output channel o reads input channel o // ch_mult; padding top/left given."""
    inp = np.repeat(c["inp"].astype(np.int64), c["ch_mult"], axis=3) + c["in_off"]
    filt = c["filt"].astype(np.int64)
    nb, ih, iw, _ = inp.shape
    _, kh, kw, oc = filt.shape
    oh, ow = c["out_hw"]
    (sh, sw), ((pt, _), (pl, _)), (dh, dw) = c["stride"], c["pad"], c["dil"]
    acc = np.zeros((nb, oh, ow, oc), np.int64)
    for oy in range(oh):
        for ox in range(ow):
            for ky in range(kh):
                for kx in range(kw):
                    iy, ix = oy * sh - pt + ky * dh, ox * sw - pl + kx * dw
                    if 0 <= iy < ih and 0 <= ix < iw:
                        acc[:, oy, ox, :] += inp[:, iy, ix, :] * filt[0, ky, kx, :]
    return finish(acc, c["bias"], c["mult"], c["shift"], c["out_off"], c["act"])


# =========================================================================== cases


def matmul_case(rng, batch, m, k, n, lt, rt):
    return {"kind": "matmul", "batch": batch, "m": m, "k": k, "n": n, "lt": lt, "rt": rt,
            "lhs": rng.integers(-128, 128, batch * m * k, dtype=np.int8),
            "rhs": rng.integers(-128, 128, batch * k * n, dtype=np.int8)}  # fmt: skip


def nt_t_case(rng, m, k, n, lhs_offset, dio):
    return {"kind": "nt_t", "m": m, "k": k, "n": n, "lhs_offset": lhs_offset, "dio": dio,
            "lhs": rng.integers(-128, 128, m * k, dtype=np.int8),
            "rhs": rng.integers(-128, 128, n * k, dtype=np.int8),
            "dst": rng.integers(-(1 << 31), 1 << 31, m * n * dio, dtype=np.int64).astype(np.int32)}  # fmt: skip


def quant(rng, count):
    mult = rng.integers(1 << 30, (1 << 31) - 1, count, dtype=np.int64).astype(np.int32)
    shift = rng.integers(-12, 2, count).astype(np.int32)
    return mult, shift


def fc_case(rng, batch, depth, outs, w_off=0, bias=True):
    mult, shift = quant(rng, 1)
    return {"kind": "fc", "batch": batch, "depth": depth, "outs": outs,
            "in_off": int(rng.integers(-127, 129)), "w_off": w_off, "out_off": int(rng.integers(-128, 128)),
            "mult": int(mult[0]), "shift": int(shift[0] - 4), "act": (-100, 120),
            "inp": rng.integers(-128, 128, (batch, depth), dtype=np.int8),
            "w": rng.integers(-128, 128, (outs, depth), dtype=np.int8),
            "bias": rng.integers(-5000, 5000, outs).astype(np.int32) if bias else None}  # fmt: skip


def conv_case(rng, nb, ih, iw, ic, oc, kh, kw, ck=None, stride=(1, 1), pad=(0, 0), dil=(1, 1), bias=True,
              up=None):
    """up: None (upscale_dims NULL) or (h, w), upscale_dims {0, h, w, 0}: ih x iw is the data's size."""
    ck = ck or ic
    uh, uw = up or (1, 1)
    oh = (ih * uh + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (iw * uw + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    mult, shift = quant(rng, oc)
    return {"kind": "conv", "in_off": int(rng.integers(-127, 129)), "out_off": int(rng.integers(-128, 128)),
            "stride": stride, "pad": pad, "dil": dil, "up": up, "out_hw": (oh, ow), "act": (-128, 127),
            "mult": mult, "shift": (shift - 6).astype(np.int32),
            "inp": rng.integers(-128, 128, (nb, ih, iw, ic), dtype=np.int8),
            "filt": rng.integers(-128, 128, (oc, kh, kw, ck), dtype=np.int8),
            "bias": rng.integers(-20000, 20000, oc).astype(np.int32) if bias else None}  # fmt: skip


def dw_case(rng, nb, ih, iw, ic, ch_mult, kh, kw, stride=(1, 1), pad=((0, 0), (0, 0)), dil=(1, 1), bias=True):
    """pad: ((top, bottom), (left, right)); the output size follows from it."""
    oc = ic * ch_mult
    oh = (ih + sum(pad[0]) - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (iw + sum(pad[1]) - dil[1] * (kw - 1) - 1) // stride[1] + 1
    mult, shift = quant(rng, oc)
    return {"kind": "dw", "in_off": int(rng.integers(-127, 129)), "out_off": int(rng.integers(-128, 128)),
            "stride": stride, "pad": pad, "dil": dil, "ch_mult": ch_mult, "out_hw": (oh, ow), "act": (-128, 127),
            "mult": mult, "shift": (shift - 3).astype(np.int32),
            "inp": rng.integers(-128, 128, (nb, ih, iw, ic), dtype=np.int8),
            "filt": rng.integers(-128, 128, (1, kh, kw, oc), dtype=np.int8),
            "bias": rng.integers(-20000, 20000, oc).astype(np.int32) if bias else None}  # fmt: skip


def reference(c):
    if c["kind"] == "dw":
        return ref_dw(c).ravel()
    if c["kind"] == "matmul":
        return ref_matmul(c["lhs"], c["rhs"], c["batch"], c["m"], c["k"], c["n"], c["lt"], c["rt"]).ravel()
    if c["kind"] == "nt_t":
        return ref_nt_t(c["lhs"], c["rhs"], c["dst"], c["m"], c["k"], c["n"], c["lhs_offset"], c["dio"])
    return (ref_fc(c) if c["kind"] == "fc" else ref_conv(c)).ravel()


def conv_buffer_bytes(c):
    _, kh, kw, _ = c["filt"].shape
    depth = kh * kw * c["inp"].shape[3]
    return 2 * ((depth + 3) // 4 * 4) * 2


# =========================================================================== host (ctypes)


def _host_type(c_type: str) -> type:
    if c_type.endswith("*"):
        return ctypes.c_void_p
    return STRUCT[c_type] if c_type in STRUCT else {"int32_t": ctypes.c_int32, cmsis_api.ENUM: ctypes.c_int32,
                                                    cmsis_api.BOOL: ctypes.c_bool}[c_type]


def _host_struct(name: str) -> type:
    """cmsis_api's struct as a ctypes.Structure (the host's layout), fields by the table's names."""
    return type(name, (ctypes.Structure,), {"_fields_": [(n, _host_type(t)) for t, n in cmsis_api.STRUCTS[name]]})


STRUCT: dict[str, type] = {}
for _name in cmsis_api.STRUCTS:  # nested structs come first in the table
    STRUCT[_name] = _host_struct(_name)
Tile, Activation, Context, Dims, ConvParams, DwConvParams, PerChannel, PerTensor, FcParams = (
    STRUCT[f"cmsis_nn_{n}"] for n in ("tile", "activation", "context", "dims", "conv_params", "dw_conv_params",
                                     "per_channel_quant_params", "per_tensor_quant_params", "fc_params"))  # fmt: skip


def nn_call(lib, fn: str, **args) -> int:
    """A CMSIS-NN function of the host library called with its arguments by parameter name."""
    return getattr(lib, fn)(*cmsis_api.call_args(fn, **args))


def ptr(a):
    return ctypes.c_void_p(None if a is None else a.ctypes.data)


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """The shim's sources, libjit's nn_s8.c and host_api.c as one host shared library."""
    so = tmp_path_factory.mktemp("host") / "libshim.so"
    srcs = [*sorted((SHIM / "src").glob("*.c")), KERNELS / "nn_s8.c", DATA / "host_api.c"]
    subprocess.run([find_tool("gcc"), "-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-fno-semantic-interposition", *SHIM_INCLUDES,
                    *map(str, srcs), "-o", str(so)], check=True)  # fmt: skip
    lib = ctypes.CDLL(str(so))
    lib.arm_convolve_s8.restype = lib.arm_fully_connected_s8.restype = ctypes.c_int32
    lib.arm_nn_mat_mult_nt_t_s8_s32.restype = lib.shim_requantize.restype = ctypes.c_int32
    lib.arm_convolve_s8_get_buffer_size.restype = ctypes.c_int32
    i32 = ctypes.c_int32
    lib.shim_requantize.argtypes = [i32, i32, i32]
    lib.libjit_matmul_s8_s32.argtypes = [ctypes.c_void_p] * 3 + [i32] * 6
    lib.arm_nn_mat_mult_nt_t_s8_s32.argtypes = [ctypes.c_void_p] * 3 + [i32] * 5
    return lib


def run_host(lib, c):
    if c["kind"] == "matmul":
        out = np.zeros(c["batch"] * c["m"] * c["n"], np.int32)
        lib.libjit_matmul_s8_s32(ptr(out), ptr(c["lhs"]), ptr(c["rhs"]), c["batch"], c["m"], c["k"], c["n"],
                                 c["lt"], c["rt"])  # fmt: skip
        return out
    if c["kind"] == "nt_t":
        out = c["dst"].copy()
        st = lib.arm_nn_mat_mult_nt_t_s8_s32(ptr(c["lhs"]), ptr(c["rhs"]), ptr(out), c["m"], c["k"], c["n"],
                                             c["lhs_offset"], c["dio"])  # fmt: skip
        assert st == 0
        return out
    if c["kind"] == "fc":
        out = np.zeros((c["batch"], c["outs"]), np.int8)
        params = FcParams(input_offset=c["in_off"], filter_offset=c["w_off"], output_offset=c["out_off"],
                          activation=Activation(min=c["act"][0], max=c["act"][1]))
        st = nn_call(
            lib, "arm_fully_connected_s8", ctx=ctypes.byref(Context(buf=None, size=0)), fc_params=ctypes.byref(params),
            quant_params=ctypes.byref(PerTensor(multiplier=c["mult"], shift=c["shift"])),
            input_dims=ctypes.byref(Dims(c["batch"], 1, 1, c["depth"])), input_data=ptr(c["inp"]),
            filter_dims=ctypes.byref(Dims(c["depth"], 1, 1, c["outs"])), filter_data=ptr(c["w"]),
            bias_dims=ctypes.byref(Dims(1, 1, 1, c["outs"])), bias_data=ptr(c["bias"]),
            output_dims=ctypes.byref(Dims(c["batch"], 1, 1, c["outs"])), output_data=ptr(out))  # fmt: skip
        assert st == 0
        return out.ravel()
    out, st = conv_host(lib, c, with_buffer=True)
    assert st == 0
    return out.ravel()


def tile(hw):
    """A cmsis_nn_tile of a case's (h, w) pair."""
    return Tile(w=hw[1], h=hw[0])


def conv_host(lib, c, with_buffer):
    nb, ih, iw, ic = upscaled(c).shape
    oc, kh, kw, ck = c["filt"].shape
    oh, ow = c["out_hw"]
    in_dims, f_dims = Dims(nb, ih, iw, ic), Dims(oc, kh, kw, ck)
    up = None if c["up"] is None else ctypes.byref(Dims(0, *c["up"], 0))
    size = lib.arm_convolve_s8_get_buffer_size(ctypes.byref(in_dims), ctypes.byref(f_dims))
    assert size == conv_buffer_bytes(c)
    buf = np.zeros(size // 2 + 2, np.int16)
    ctx = Context(buf=buf.ctypes.data if with_buffer else None, size=size)
    params = ConvParams(input_offset=c["in_off"], output_offset=c["out_off"], stride=tile(c["stride"]),
                        padding=tile(c["pad"]), dilation=tile(c["dil"]),
                        activation=Activation(min=c["act"][0], max=c["act"][1]))
    out = np.zeros((nb, oh, ow, oc), np.int8)
    quant = PerChannel(multiplier=c["mult"].ctypes.data, shift=c["shift"].ctypes.data)
    st = nn_call(lib, "arm_convolve_s8", ctx=ctypes.byref(ctx), conv_params=ctypes.byref(params),
                 quant_params=ctypes.byref(quant), input_dims=ctypes.byref(in_dims), input_data=ptr(c["inp"]),
                 filter_dims=ctypes.byref(f_dims), filter_data=ptr(c["filt"]),
                 bias_dims=ctypes.byref(Dims(1, 1, 1, oc)), bias_data=ptr(c["bias"]), upscale_dims=up,
                 output_dims=ctypes.byref(Dims(nb, oh, ow, oc)), output_data=ptr(out))  # fmt: skip
    return out, st


def host_cases(rng):
    cases = []
    for batch, m, k, n in [(1, 1, 1, 1), (2, 3, 13, 5), (1, 4, 16, 6), (3, 5, 9, 4), (1, 7, 33, 3), (1, 1, 64, 10)]:
        cases += [matmul_case(rng, batch, m, k, n, lt, rt) for lt in (0, 1) for rt in (0, 1)]
    cases += [nt_t_case(rng, m, k, n, off, dio)
              for (m, k, n) in [(1, 1, 1), (3, 7, 5), (4, 16, 4), (5, 19, 2)] for off in (0, -128, 37, 128)
              for dio in (1, 3)]  # fmt: skip
    cases += [fc_case(rng, 1, 1, 1), fc_case(rng, 2, 19, 7), fc_case(rng, 3, 32, 10, w_off=5),
              fc_case(rng, 1, 23, 9, bias=False), fc_case(rng, 2, 8, 3, w_off=-3, bias=False)]  # fmt: skip
    cases += [
        conv_case(rng, 1, 5, 5, 3, 4, 3, 3),
        conv_case(rng, 2, 7, 6, 5, 6, 3, 3, stride=(2, 1), pad=(1, 1)),
        conv_case(rng, 1, 8, 8, 4, 5, 3, 2, dil=(2, 1), pad=(2, 0), bias=False),
        conv_case(rng, 1, 6, 7, 6, 4, 3, 3, ck=3, pad=(1, 1)),  # 2 groups of 2
        conv_case(rng, 1, 5, 5, 8, 8, 1, 1, ck=2),  # 4 groups of 2
        conv_case(rng, 1, 1, 1, 1, 1, 1, 1),
        conv_case(rng, 1, 9, 1, 7, 3, 4, 1, stride=(3, 1), pad=(2, 0)),
        # v7.0.0's upscale_dims: zero-point rows / columns inserted (transposed convolution)
        conv_case(rng, 1, 3, 4, 5, 6, 3, 3, pad=(2, 2), up=(2, 2)),
        conv_case(rng, 2, 4, 3, 3, 5, 2, 3, pad=(1, 0), up=(2, 1)),
        conv_case(rng, 1, 5, 5, 3, 4, 3, 3, up=(1, 1)),
    ]
    return cases


def test_requantize_matches_cmsis_nn_arithmetic(host):
    """arm_nn_requantize vs the model, incl. ties, wrap-around of the left shift, extremes."""
    rng = np.random.default_rng(1)
    vals = [0, 1, -1, 2, -2, 3, -3, 1 << 20, -(1 << 20), (1 << 31) - 1, -(1 << 31), 12345, -12345,
            *rng.integers(-(1 << 31), 1 << 31, 40).tolist()]  # fmt: skip
    mults = [1 << 30, (1 << 31) - 1, 1, 1518500250, -(1 << 30), *rng.integers(1, 1 << 31, 6).tolist()]
    shifts = [-31, -20, -8, -1, 0, 1, 5, 30]
    bad = [(v, m, s) for v in vals for m in mults for s in shifts
           if host.shim_requantize(v, m, s) != requantize_scalar(v, m, s)]  # fmt: skip
    assert not bad, bad[:5]
    # the vectorized model agrees with the scalar one
    v, m, s = np.meshgrid(vals, mults, shifts)
    expect = [requantize_scalar(int(a), int(b), int(c)) for a, b, c in zip(v.ravel(), m.ravel(), s.ravel())]
    assert requantize(v.ravel(), m.ravel(), s.ravel()).tolist() == expect
    # ties: the doubling high multiply rounds them up (-1.5 -> -1; TFLite's reference gives -2),
    # the divide by 2^n rounds them away from zero (-1.5 -> -2)
    rq = host.shim_requantize
    assert (rq(-3, 1 << 30, 0), rq(3, 1 << 30, 0), rq(-6, 1 << 30, -1), rq(6, 1 << 30, -1)) == (-1, 2, -2, 2)


def test_kernels_on_host_match_numpy(host):
    rng = np.random.default_rng(7)
    for c in host_cases(rng):
        got, want = run_host(host, c), reference(c)
        assert np.array_equal(got, want), {k: v for k, v in c.items() if np.isscalar(v) or isinstance(v, tuple)}


def test_matmul_s8_s32_wraps_like_int32(host):
    """k * 128 * 128 overflows int32: every layout must wrap modulo 2^32 exactly."""
    k = 140_000
    for lt in (0, 1):
        for rt in (0, 1):
            lhs = np.full(2 * k, -128, np.int8)
            rhs = np.full(k, -128, np.int8)
            rhs[::1000] = 127
            out = np.zeros(2, np.int32)
            host.libjit_matmul_s8_s32(ptr(out), ptr(lhs), ptr(rhs), 1, 2, k, 1, lt, rt)
            assert out.tolist() == ref_matmul(lhs, rhs, 1, 2, k, 1, lt, rt).ravel().tolist()
            assert out[0] < 0  # it did wrap


def test_convolve_s8_argument_errors(host):
    rng = np.random.default_rng(3)
    c = conv_case(rng, 1, 4, 4, 4, 2, 3, 3)
    assert conv_host(host, c, with_buffer=False)[1] == -1  # ARM_CMSIS_NN_ARG_ERROR: no scratch
    bad = dict(c, filt=rng.integers(-128, 128, (3, 3, 3, 3), dtype=np.int8))  # C_IN 4 is not a multiple of 3
    assert conv_host(host, bad, with_buffer=True)[1] == -1


# =========================================================================== the wrappers (TFLite Micro's calls)


def capture_view(c) -> dict:
    """A case as capture's block parameters (cmsis_calls' form and buffer-size functions)."""
    if c["kind"] == "dw":
        return {"padding": c["pad"], "stride": c["stride"], "input_dims": c["inp"].shape, "ch_mult": c["ch_mult"],
                "filter_dims": c["filt"].shape, "output_dims": (c["inp"].shape[0], *c["out_hw"], c["filt"].shape[3])}
    (ph, pw) = c["pad"]
    return {"padding": ((ph, ph), (pw, pw)), "stride": c["stride"], "input_dims": c["inp"].shape,
            "filter_dims": c["filt"].shape}


def wrapper_call(lib, c, fn: str | None = None, with_buffer: bool = True) -> tuple[np.ndarray, int, int]:
    """(output, status, the wrapper's buffer size) of case c through its wrapper (or `fn`, a form
    with the same arguments) on the host."""
    nb, ih, iw, ic = c["inp"].shape
    oh, ow = c["out_hw"]
    f = c["filt"].shape
    oc = f[0] if c["kind"] == "conv" else f[3]
    in_dims, f_dims, out_dims = Dims(nb, ih, iw, ic), Dims(*f), Dims(nb, oh, ow, oc)
    act = Activation(min=c["act"][0], max=c["act"][1])
    if c["kind"] == "conv":
        params = ConvParams(input_offset=c["in_off"], output_offset=c["out_off"], stride=tile(c["stride"]),
                            padding=tile(c["pad"]), dilation=tile(c["dil"]), activation=act)
        fn, size_fn = fn or "arm_convolve_wrapper_s8", lib.arm_convolve_wrapper_s8_get_buffer_size
    else:
        params = DwConvParams(input_offset=c["in_off"], output_offset=c["out_off"], ch_mult=c["ch_mult"],
                              stride=tile(c["stride"]), padding=tile((c["pad"][0][0], c["pad"][1][0])),
                              dilation=tile(c["dil"]), activation=act)
        fn, size_fn = fn or "arm_depthwise_conv_wrapper_s8", lib.arm_depthwise_conv_wrapper_s8_get_buffer_size
    size = size_fn(*(ctypes.byref(x) for x in (params, in_dims, f_dims, out_dims)))
    buf = np.zeros(max(size, 4) // 2 + 2, np.int16)
    ctx = Context(buf=buf.ctypes.data if with_buffer and size else None, size=size)
    out = np.zeros((nb, oh, ow, oc), np.int8)
    quant = PerChannel(multiplier=c["mult"].ctypes.data, shift=c["shift"].ctypes.data)
    own = {"conv_params" if c["kind"] == "conv" else "dw_conv_params": ctypes.byref(params)}
    if fn == "arm_convolve_s8":
        own["upscale_dims"] = None
    st = nn_call(lib, fn, ctx=ctypes.byref(ctx), quant_params=ctypes.byref(quant), input_dims=ctypes.byref(in_dims),
                 input_data=ptr(c["inp"]), filter_dims=ctypes.byref(f_dims), filter_data=ptr(c["filt"]),
                 bias_dims=ctypes.byref(Dims(1, 1, 1, oc)), bias_data=ptr(c["bias"]),
                 output_dims=ctypes.byref(out_dims), output_data=ptr(out), **own)  # fmt: skip
    return out, st, size


def wrapper_cases(rng):
    """(case, the form v7.0.0's wrapper picks, its buffer bytes on a DSP core) for every form."""
    conv = lambda *a, **k: dict(conv_case(rng, *a, **k), wrapper=True)  # noqa: E731
    return [
        (conv(1, 5, 5, 10, 7, 1, 1), "arm_convolve_1x1_s8_fast", 0),  # 25 pixels, depth 10, 7 channels
        (conv(2, 3, 4, 8, 6, 1, 1, bias=False), "arm_convolve_1x1_s8_fast", 0),  # two batches, one block of rows
        (conv(1, 7, 8, 6, 5, 1, 1, stride=(2, 3)), "arm_convolve_1x1_s8", 0),
        (conv(1, 1, 9, 4, 5, 1, 3, pad=(0, 1)), "arm_convolve_1_x_n_s8", 2 * 12 * 2),
        (conv(1, 1, 9, 3, 5, 1, 3, pad=(0, 1)), "arm_convolve_s8", 2 * 12 * 2),  # stride.w * C_IN = 3
        (conv(1, 5, 5, 3, 4, 3, 3, pad=(1, 1)), "arm_convolve_s8", 2 * 28 * 2),
        (conv(1, 6, 5, 4, 3, 1, 1, pad=(1, 0)), "arm_convolve_s8", 2 * 4 * 2),  # 1x1, padded
        (dw_case(rng, 1, 6, 5, 6, 1, 3, 3, pad=((1, 1), (1, 1))), "arm_depthwise_conv_3x3_s8", 0),
        (dw_case(rng, 1, 7, 8, 5, 1, 3, 3, stride=(2, 2), pad=((0, 1), (0, 1))), "arm_depthwise_conv_3x3_s8", 0),
        (dw_case(rng, 1, 8, 7, 6, 1, 3, 3, stride=(2, 2), pad=((2, 1), (1, 2))), "arm_depthwise_conv_s8_opt",
         6 * 9 * 2),
        (dw_case(rng, 1, 7, 6, 7, 1, 5, 3, pad=((2, 2), (1, 1))), "arm_depthwise_conv_s8_opt", 7 * 15 * 2),
        (dw_case(rng, 1, 6, 6, 5, 2, 3, 3, pad=((1, 1), (1, 1))), "arm_depthwise_conv_s8", 0),  # ch_mult 2
        (dw_case(rng, 2, 5, 5, 4, 1, 3, 3, pad=((1, 1), (1, 1)), bias=False), "arm_depthwise_conv_s8", 0),  # N 2
        (dw_case(rng, 1, 8, 8, 4, 1, 3, 3, pad=((2, 2), (2, 2)), dil=(2, 2)), "arm_depthwise_conv_s8", 0),
    ]


def test_wrappers_pick_v7_forms_with_v7_buffer_sizes_and_match_numpy(host):
    """Each wrapper's results equal the numpy reference in every form it picks; its buffer size
    is CMSIS-NN v7.0.0's for that form (with the DSP extension: the host build has none, so
    the _dsp functions are compared) and capture's formula gives the same."""
    from specializer.capture import cmsis_calls

    for c, form, size in wrapper_cases(np.random.default_rng(5)):
        out, st, _ = wrapper_call(host, c)
        assert st == 0 and np.array_equal(out.ravel(), reference(c)), form
        # the form alone gives the same (it accepts these arguments)
        out2, st2, _ = wrapper_call(host, c, form)
        assert st2 == 0 and np.array_equal(out2, out), form
        view = capture_view(c)
        if c["kind"] == "conv":
            assert cmsis_calls.convolve_wrapper_s8_form(view) == form
            assert cmsis_calls.convolve_wrapper_s8_buffer_size(view) == size
        elif c["dil"] == (1, 1):
            assert cmsis_calls.depthwise_conv_wrapper_s8_form(view) == form
            assert cmsis_calls.depthwise_conv_wrapper_s8_buffer_size(view) == size
    # the _dsp sizes on the host (which builds the shim without the DSP extension)
    rng = np.random.default_rng(6)
    dw = dw_case(rng, 1, 7, 6, 7, 1, 5, 3, pad=((2, 2), (1, 1)))
    params = DwConvParams(input_offset=0, output_offset=0, ch_mult=1, stride=tile((1, 1)), padding=tile((2, 1)),
                          dilation=tile((1, 1)), activation=Activation(-128, 127))
    dims = (Dims(1, 7, 6, 7), Dims(1, 5, 3, 7), Dims(1, 7, 6, 7))
    assert host.arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp(*map(ctypes.byref, (params, *dims))) == 7 * 15 * 2
    assert host.arm_depthwise_conv_wrapper_s8_get_buffer_size(*map(ctypes.byref, (params, *dims))) == 0
    assert host.arm_depthwise_conv_s8_opt_get_buffer_size(ctypes.byref(dims[0]), ctypes.byref(dims[1])) == 0
    assert wrapper_call(host, dw, with_buffer=False)[1] == 0  # no DSP: _opt needs no scratch
    # v7.0.0's 1x1 size test does not look at groups: a grouped 1x1 conv gets 0 (arm_convolve_s8 needs more)
    grouped = ConvParams(input_offset=0, output_offset=0, stride=tile((1, 1)), padding=tile((0, 0)),
                         dilation=tile((1, 1)), activation=Activation(-128, 127))
    sizes = (Dims(1, 5, 5, 8), Dims(8, 1, 1, 2), Dims(1, 5, 5, 8))
    assert host.arm_convolve_wrapper_s8_get_buffer_size_dsp(*map(ctypes.byref, (grouped, *sizes))) == 0


def test_fast_forms_refuse_what_cmsis_nn_refuses(host):
    rng = np.random.default_rng(8)
    padded = dict(conv_case(rng, 1, 5, 5, 4, 3, 1, 1, pad=(1, 0)))
    strided = dict(conv_case(rng, 1, 5, 5, 4, 3, 1, 1, stride=(2, 1)))
    assert wrapper_call(host, padded, "arm_convolve_1x1_s8_fast")[1] == -1
    assert wrapper_call(host, strided, "arm_convolve_1x1_s8_fast")[1] == -1
    assert wrapper_call(host, padded, "arm_convolve_1x1_s8")[1] == -1
    one_n = conv_case(rng, 1, 1, 9, 4, 5, 1, 3, pad=(0, 1))
    assert wrapper_call(host, one_n, "arm_convolve_1_x_n_s8", with_buffer=False)[1] == -1  # no scratch
    assert wrapper_call(host, conv_case(rng, 1, 2, 9, 4, 5, 1, 3), "arm_convolve_1_x_n_s8")[1] == -1  # H 2
    assert wrapper_call(host, conv_case(rng, 1, 1, 9, 3, 5, 1, 3), "arm_convolve_1_x_n_s8")[1] == -1  # 3 % 4
    assert wrapper_call(host, dw_case(rng, 1, 6, 6, 4, 1, 3, 3, pad=((1, 1), (2, 2))),
                        "arm_depthwise_conv_3x3_s8")[1] == -1  # padding.w 2
    assert wrapper_call(host, dw_case(rng, 1, 6, 6, 4, 1, 5, 5), "arm_depthwise_conv_3x3_s8")[1] == -1
    assert wrapper_call(host, dw_case(rng, 1, 6, 6, 4, 2, 3, 3), "arm_depthwise_conv_3x3_s8")[1] == -1  # C_OUT 8
    assert wrapper_call(host, dw_case(rng, 1, 6, 6, 4, 2, 3, 3), "arm_depthwise_conv_s8_opt")[1] == -1


# =========================================================================== target (QEMU)

TARGET_CFLAGS = [*libjit.CFLAGS, "-Wall", "-Werror"]


def build_firmware(tmp: Path, name: str, c_files: list[Path]) -> Path:
    clang = find_tool("clang-19")
    newlib = libjit._newlib_include()
    objs = []
    for src in c_files:
        obj = tmp / f"{name}-{src.stem}.o"
        subprocess.run([clang, *TARGET_CFLAGS, *SHIM_INCLUDES, f"-I{DATA}", *newlib, "-c", str(src), "-o", str(obj)],
                       check=True)  # fmt: skip
        objs.append(str(obj))
    elf = tmp / f"{name}.elf"
    subprocess.run([find_tool("arm-none-eabi-gcc"), "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                    "-mfpu=fpv4-sp-d16", "-nostartfiles", "-T", str(DATA / "link.ld"), "-Wl,--gc-sections",
                    str(DATA / "startup.S"), *objs, "-lc", "-lgcc", "-o", str(elf)], check=True)  # fmt: skip
    return elf


def run_firmware(elf: Path) -> dict[str, list[int]]:
    r = subprocess.run(qemu.qemu_command(elf), capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)  # fmt: skip
    assert r.returncode == 0, (r.returncode, r.stdout[-500:], r.stderr[-500:])
    lines = r.stdout.splitlines()
    assert lines and lines[-1] == "end", r.stdout[-500:]
    return {ln.split()[0]: [int(w, 16) for w in ln.split()[1:]] for ln in lines[:-1]}


def test_intrinsics_on_cortex_m4(tmp_path):
    """Every intrinsic of cmsis_compiler.h, executed on QEMU's Cortex-M4, against the model."""
    elf = build_firmware(tmp_path, "intrinsics", [DATA / "intrinsics.c", DATA / "io.c"])
    res = run_firmware(elf)
    v = res.pop("values")
    n = len(v)
    assert n >= 16
    pairs = [(a, b) for a in v for b in v]
    expect = {name: [f(a) & M32 for a in v] for name, f in UNARY.items()}
    expect |= {name: [f(a, b) & M32 for a, b in pairs] for name, f in BINARY.items()}
    expect |= {name: [f(v[i], v[j], v[(i + j) % n]) & M32 for i in range(n) for j in range(n)]
               for name, f in TERNARY.items()}  # fmt: skip
    expect |= {name: [f(v[i], v[j], (v[(i + j) % n] << 32) | v[(i + 2 * j + 1) % n]) & M64
                      for i in range(n) for j in range(n)] for name, f in ACC64.items()}  # fmt: skip
    expect["UNALIGNED_UINT32_READ"] = [int.from_bytes(UNALIGNED_BYTES[o:o + 4], "little") for o in range(13)]
    expect["UNALIGNED_UINT16_READ"] = [int.from_bytes(UNALIGNED_BYTES[o:o + 2], "little") for o in range(15)]
    expect["UNALIGNED_UINT32_WRITE"] = [0, 0, 0, 0xD4, 0xC3, 0xB2, 0xA1, 0]
    assert sorted(res) == sorted(expect)
    wrong = []
    for name, want in expect.items():
        got = res[name]
        assert len(got) == len(want), name
        for idx, (g, w) in enumerate(zip(got, want)):
            if g != w:
                i, j = divmod(idx, n)
                wrong.append(f"{name}(v[{i}]=0x{v[i]:08x}, v[{j}]=0x{v[j]:08x}): got 0x{g:x}, want 0x{w:x}")
    assert not wrong, f"{len(wrong)} mismatches, first: " + "; ".join(wrong[:5])


def c_array(name: str, a: np.ndarray | None, ctype: str) -> str:
    if a is None:
        return f"#define {name} 0\n"
    vals = ",".join(str(int(x)) for x in np.ravel(a)) or "0"
    return f"static {ctype} {name}[] = {{{vals}}};\n"


def emit_case(i: int, c: dict) -> tuple[str, str]:
    """(definitions, statements) running case i on the target and printing 'case<i> ...'."""
    p, d, s = f"c{i}_", [], []
    ref_len = len(reference(c))
    if c["kind"] == "matmul":
        d += [c_array(p + "l", c["lhs"], "const int8_t"), c_array(p + "r", c["rhs"], "const int8_t"),
              f"static int32_t {p}o[{ref_len}];\n"]  # fmt: skip
        s.append(f"libjit_matmul_s8_s32({p}o, {p}l, {p}r, {c['batch']}, {c['m']}, {c['k']}, {c['n']}, "
                 f"{c['lt']}, {c['rt']});")  # fmt: skip
    elif c["kind"] == "nt_t":
        d += [c_array(p + "l", c["lhs"], "const int8_t"), c_array(p + "r", c["rhs"], "const int8_t"),
              c_array(p + "o", c["dst"], "int32_t")]  # fmt: skip
        s.append(f"if (arm_nn_mat_mult_nt_t_s8_s32({p}l, {p}r, {p}o, {c['m']}, {c['k']}, {c['n']}, "
                 f"{c['lhs_offset']}, {c['dio']}) != ARM_CMSIS_NN_SUCCESS) return 1;")  # fmt: skip
    elif c["kind"] == "fc":
        d += [c_array(p + "x", c["inp"], "const int8_t"), c_array(p + "w", c["w"], "const int8_t"),
              c_array(p + "b", c["bias"], "const int32_t"), f"static int8_t {p}o[{ref_len}];\n"]  # fmt: skip
        s.append(f"""{{
    const cmsis_nn_context ctx = {{0, 0}};
    const cmsis_nn_fc_params fp = {{{c['in_off']}, {c['w_off']}, {c['out_off']}, {{{c['act'][0]}, {c['act'][1]}}}}};
    const cmsis_nn_per_tensor_quant_params q = {{{c['mult']}, {c['shift']}}};
    const cmsis_nn_dims id = {{{c['batch']}, 1, 1, {c['depth']}}}, fd = {{{c['depth']}, 1, 1, {c['outs']}}};
    const cmsis_nn_dims bd = {{1, 1, 1, {c['outs']}}}, od = {{{c['batch']}, 1, 1, {c['outs']}}};
    if (arm_fully_connected_s8(&ctx, &fp, &q, &id, {p}x, &fd, {p}w, &bd, {p}b, &od, {p}o) != ARM_CMSIS_NN_SUCCESS)
        return 1;
  }}""")
    elif c["kind"] == "dw" or c.get("wrapper"):
        nb, ih, iw, ic = c["inp"].shape
        oh, ow = c["out_hw"]
        f = c["filt"].shape
        oc = f[3] if c["kind"] == "dw" else f[0]
        if c["kind"] == "dw":
            fn, ptype, extra = "arm_depthwise_conv_wrapper_s8", "cmsis_nn_dw_conv_params", f"{c['ch_mult']}, "
            pad = (c["pad"][0][0], c["pad"][1][0])
        else:
            fn, ptype, extra, pad = "arm_convolve_wrapper_s8", "cmsis_nn_conv_params", "", c["pad"]
        d += [c_array(p + "x", c["inp"], "const int8_t"), c_array(p + "f", c["filt"], "const int8_t"),
              c_array(p + "b", c["bias"], "const int32_t"), c_array(p + "m", c["mult"], "int32_t"),
              c_array(p + "s", c["shift"], "int32_t"), f"static int8_t {p}o[{ref_len}];\n"]  # fmt: skip
        s.append(f"""{{
    const cmsis_nn_dims id = {{{nb}, {ih}, {iw}, {ic}}}, fd = {{{f[0]}, {f[1]}, {f[2]}, {f[3]}}};
    const cmsis_nn_dims bd = {{1, 1, 1, {oc}}}, od = {{{nb}, {oh}, {ow}, {oc}}};
    const {ptype} cp = {{{c['in_off']}, {c['out_off']}, {extra}{{{c['stride'][1]}, {c['stride'][0]}}},
        {{{pad[1]}, {pad[0]}}}, {{{c['dil'][1]}, {c['dil'][0]}}}, {{{c['act'][0]}, {c['act'][1]}}}}};
    const int32_t size = {fn}_get_buffer_size(&cp, &id, &fd, &od);
    if (size != {c['size']} || size > (int32_t)sizeof scratch) return 2;
    const cmsis_nn_context ctx = {{size ? scratch : 0, size}};
    const cmsis_nn_per_channel_quant_params q = {{{p}m, {p}s}};
    if ({fn}(&ctx, &cp, &q, &id, {p}x, &fd, {p}f, &bd, {p}b, &od, {p}o) != ARM_CMSIS_NN_SUCCESS)
        return 1;
  }}""")
    else:
        nb, ih, iw, ic = upscaled(c).shape
        oc, kh, kw, ck = c["filt"].shape
        oh, ow = c["out_hw"]
        up = "0" if c["up"] is None else f"&(const cmsis_nn_dims){{0, {c['up'][0]}, {c['up'][1]}, 0}}"
        d += [c_array(p + "x", c["inp"], "const int8_t"), c_array(p + "f", c["filt"], "const int8_t"),
              c_array(p + "b", c["bias"], "const int32_t"), c_array(p + "m", c["mult"], "int32_t"),
              c_array(p + "s", c["shift"], "int32_t"), f"static int8_t {p}o[{ref_len}];\n"]  # fmt: skip
        s.append(f"""{{
    const cmsis_nn_dims id = {{{nb}, {ih}, {iw}, {ic}}}, fd = {{{oc}, {kh}, {kw}, {ck}}};
    const cmsis_nn_dims bd = {{1, 1, 1, {oc}}}, od = {{{nb}, {oh}, {ow}, {oc}}};
    const int32_t size = arm_convolve_s8_get_buffer_size(&id, &fd);
    if (size != {conv_buffer_bytes(c)} || size > (int32_t)sizeof scratch) return 2;
    const cmsis_nn_context ctx = {{scratch, size}};
    const cmsis_nn_conv_params cp = {{{c['in_off']}, {c['out_off']}, {{{c['stride'][1]}, {c['stride'][0]}}},
        {{{c['pad'][1]}, {c['pad'][0]}}}, {{{c['dil'][1]}, {c['dil'][0]}}}, {{{c['act'][0]}, {c['act'][1]}}}}};
    const cmsis_nn_per_channel_quant_params q = {{{p}m, {p}s}};
    if (arm_convolve_s8(&ctx, &cp, &q, &id, {p}x, &fd, {p}f, &bd, {p}b, {up}, &od, {p}o) != ARM_CMSIS_NN_SUCCESS)
        return 1;
  }}""")
    s.append(f'io_str("case{i}");\n  for (int i = 0; i < {ref_len}; i++) io_hex32((uint32_t)(int32_t){p}o[i]);\n'
             f'  io_str("\\n");')  # fmt: skip
    return "".join(d), "\n  ".join(s)


def target_cases(rng):
    cases = [matmul_case(rng, b, m, k, n, lt, rt)
             for (b, m, k, n) in [(2, 3, 13, 5), (1, 4, 16, 6), (1, 1, 7, 1)] for lt in (0, 1) for rt in (0, 1)]
    cases += [nt_t_case(rng, 5, 19, 3, -37, 2), nt_t_case(rng, 4, 24, 4, 128, 1), nt_t_case(rng, 3, 3, 3, 0, 1)]
    cases += [fc_case(rng, 2, 19, 7), fc_case(rng, 1, 32, 5, w_off=-7, bias=False)]
    cases += [conv_case(rng, 1, 7, 6, 5, 6, 3, 3, stride=(2, 1), pad=(1, 1)),
              conv_case(rng, 1, 6, 7, 6, 3, 3, 3, ck=2, dil=(2, 1), pad=(1, 2), bias=False),
              conv_case(rng, 2, 4, 4, 8, 4, 1, 1),
              conv_case(rng, 2, 3, 4, 6, 5, 3, 3, pad=(1, 2), up=(2, 2)),
              conv_case(rng, 1, 5, 3, 5, 4, 3, 2, pad=(0, 1), up=(1, 2))]  # fmt: skip
    # every form of the two wrappers, with the DSP extension: buffer sizes as CMSIS-NN v7.0.0's
    cases += [dict(c, size=size) for c, _, size in wrapper_cases(rng)]
    return cases


def test_kernels_on_cortex_m4(tmp_path):
    """The DSP paths (SMLAD/SXTB16) of the shim kernels and libjit_matmul_s8_s32 on QEMU; the two
    wrappers in every form they pick, their buffer sizes CMSIS-NN v7.0.0's with the DSP extension."""
    cases = target_cases(np.random.default_rng(11))
    defs, stmts = zip(*(emit_case(i, c) for i, c in enumerate(cases)))
    main = tmp_path / "kernels.c"
    main.write_text(
        '#include <stdint.h>\n#include "libjit_cmsis_nn.h"\n'
        '#include "libjit_s8.h"\n#include "io.h"\n\n'
        "static int16_t scratch[2048] __attribute__((aligned(4)));\n" + "".join(defs) +
        "\nint main(void)\n{\n  " + "\n  ".join(stmts) + '\n  io_str("end\\n");\n  io_flush();\n  return 0;\n}\n'
    )  # fmt: skip
    srcs = [main, DATA / "io.c", KERNELS / "nn_s8.c", *sorted((SHIM / "src").glob("*.c"))]
    res = run_firmware(build_firmware(tmp_path, "kernels", srcs))
    for i, c in enumerate(cases):
        got = wrap32(res[f"case{i}"])
        assert np.array_equal(got, reference(c).astype(np.int64)), (i, c["kind"])


def test_shim_kernels_use_dsp_instructions(tmp_path):
    """With the DSP extension the inner loops really are SMLAD/SXTB16 (not the plain-C path)."""
    for src in ("arm_nn_mat_mult_nt_t_s8_s32.c", "arm_convolve_s8.c", "arm_nn_vec_mat_mult_t_s8.c",
                "arm_convolve_1x1_s8.c"):
        asm = subprocess.run([find_tool("clang-19"), *TARGET_CFLAGS, *SHIM_INCLUDES, *libjit._newlib_include(),
                              "-S", "-o", "-", str(SHIM / "src" / src)],
                             check=True, capture_output=True, text=True).stdout  # fmt: skip
        ops = [ln.split()[0] for ln in asm.splitlines() if ln.startswith("\t") and ln.split()]
        assert "smlad" in ops and any(o.startswith("sxt") for o in ops), src
    # average pool and add widen four int8 lanes at a time, the offset added by the same SXTAB16
    for src in ("arm_avgpool_s8.c", "arm_elementwise_add_s8.c"):
        asm = subprocess.run([find_tool("clang-19"), *TARGET_CFLAGS, *SHIM_INCLUDES, *libjit._newlib_include(),
                              "-S", "-o", "-", str(SHIM / "src" / src)],
                             check=True, capture_output=True, text=True).stdout  # fmt: skip
        ops = [ln.split()[0] for ln in asm.splitlines() if ln.startswith("\t") and ln.split()]
        assert "sxtab16" in ops, src


# =========================================================================== CMSIS-NN checkout option

GROUPS = {"arm_fully_connected_s8.c": "FullyConnectedFunctions", "arm_convolve_s8.c": "ConvolutionFunctions"}


def fake_checkout(root: Path) -> Path:
    """A directory laid out like a CMSIS-NN checkout (Include/, Include/Internal/,
    Source/<Group>/*.c), made of the shim's own files plus a marker function."""
    (root / "Include" / "Internal").mkdir(parents=True)
    for h in (SHIM / "include").glob("*.h"):
        shutil.copy(h, root / "Include" / h.name)
    for api in ("arm_nnfunctions.h", "arm_nnsupportfunctions.h"):  # under CMSIS-NN's header names too
        shutil.copy(SHIM / "include" / api.replace("arm_", "shim_"), root / "Include" / api)
    (root / "Include" / "Internal" / "arm_nn_compiler.h").write_text("/* layout only */\n")
    for src in sorted((SHIM / "src").glob("*.c")):
        if src.name.startswith("shim_"):  # the shim's own helpers, no CMSIS-NN API: not in a checkout
            continue
        group = root / "Source" / GROUPS.get(src.name, "NNSupportFunctions")
        group.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, group / src.name)
        for h in (SHIM / "src").glob("*.h"):  # the shim's private headers, beside the sources
            shutil.copy(h, group / h.name)
        # a form's file includes the general kernel's (arm_convolve_1x1_s8.c: arm_convolve_s8.c):
        # reachable on the include path, compiled only where it is listed
        shutil.copy(src, root / "Include" / src.name)
    marker = root / "Source" / "NNSupportFunctions" / "arm_nn_mat_mult_nt_t_s8_s32.c"
    marker.write_text(marker.read_text() + "\nint fake_checkout_marker(void) { return 42; }\n")
    return root


def test_checkout_is_built_and_reported(tmp_path, monkeypatch):
    root = fake_checkout(tmp_path / "CMSIS-NN")
    monkeypatch.setattr(libjit, "build_dir", lambda: tmp_path / "build")  # keep the repo's cache clean
    lib = libjit.build(cmsis_nn_path=str(root))
    assert lib.cmsis_nn == f"CMSIS-NN checkout at {root.resolve()}"
    srcs = {s.resolve() for s in lib.sources}
    assert (root / "Source" / "ConvolutionFunctions" / "arm_convolve_s8.c").resolve() in srcs
    assert not any(SHIM in s.parents for s in srcs)  # the shim's sources are not used
    import llvmlite.binding as llvm

    mod = llvm.parse_bitcode(lib.bitcode.read_bytes())
    defined = {f.name for f in mod.functions if not f.is_declaration}
    assert {"fake_checkout_marker", "libjit_matmul_s8_s32", "arm_nn_mat_mult_nt_t_s8_s32",
            "arm_convolve_s8", "arm_fully_connected_s8"} <= defined  # fmt: skip
    # the same checkout through the environment variable
    monkeypatch.setenv("SPECIALIZER_CMSIS_NN", str(root))
    nn = cmsis.cmsis_nn()
    assert nn.kind == "checkout" and nn.describe() == lib.cmsis_nn
    assert nn.include_dirs[0] == root.resolve() / "Include"


def test_shim_is_the_default(monkeypatch):
    monkeypatch.delenv("SPECIALIZER_CMSIS_NN", raising=False)
    nn = cmsis.cmsis_nn()
    assert nn.kind == "shim" and nn.describe() == "cmsis_nn_shim (built-in)"
    assert {s.name for s in nn.sources} >= {"arm_convolve_s8.c", "arm_fully_connected_s8.c"}


@pytest.mark.parametrize("layout", ["empty", "no_source", "too_old"])
def test_bad_checkout_is_one_line_error(tmp_path, monkeypatch, layout):
    bad = tmp_path / "not-nn"
    (bad / "Include").mkdir(parents=True)
    if layout != "empty":
        (bad / "Include" / "arm_nnfunctions.h").write_text("/* */\n")
    if layout == "too_old":
        (bad / "Source" / "ConvolutionFunctions").mkdir(parents=True)
        (bad / "Include" / "arm_nnsupportfunctions.h").write_text("/* no s8_s32 matmul */\n")
    with pytest.raises(UserError) as e:
        cmsis.cmsis_nn(str(bad))
    msg = str(e.value)
    assert "\n" not in msg and str(bad) in msg
    assert ("too old" in msg) if layout == "too_old" else ("is not a CMSIS-NN checkout" in msg)
    monkeypatch.setenv("SPECIALIZER_CMSIS_NN", str(bad))
    with pytest.raises(UserError):
        libjit.build()
