"""Static memory plan: every XLA allocation becomes a global at a link-time address.

Weights become constant globals holding their values (flash); inputs and outputs are globals
the caller fills and reads; XLA's constants are constant globals; every other allocation
(temporaries, intermediate results) is placed in one shared arena global.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from specializer.capture.xla_executable import Allocation

ALIGN = 64  # XLA's kernels assume 64-byte aligned buffers


@dataclass(frozen=True)
class MemoryPlan:
    places: dict  # allocation index -> (symbol, byte offset)
    globals_ir: str
    scratch: str | None = None  # the libjit kernels' shared working buffer


def _q(name: str) -> str:
    return '@"' + name + '"'


def _bytes_init(raw: bytes) -> str:
    return "c\"" + "".join(f"\\{b:02X}" for b in raw) + "\""


def typed_initializer(values: np.ndarray) -> tuple[str, str]:
    """(LLVM type, initializer) for an array; typed so a person diffing the IR can read it."""
    flat = np.ascontiguousarray(values).reshape(-1)
    n = flat.size
    if flat.dtype == np.float32:
        items = ", ".join("float 0x%016X" % struct.unpack("<Q", struct.pack("<d", float(v)))[0]
                          for v in flat)
        return f"[{n} x float]", f"[{items}]"
    if flat.dtype.kind in "iu" and flat.dtype.itemsize in (1, 2, 4):
        bits = flat.dtype.itemsize * 8
        items = ", ".join(f"i{bits} {int(v)}" for v in flat.view(f"i{flat.dtype.itemsize}"))
        return f"[{n} x i{bits}]", f"[{items}]"
    raw = flat.tobytes()
    return f"[{len(raw)} x i8]", _bytes_init(raw)


def plan(prefix: str, allocs: tuple[Allocation, ...], params: list[dict],
         param_values: dict[int, np.ndarray], constants: dict[int, np.ndarray],
         output_allocs: dict[int, int], scratch: int = 0) -> MemoryPlan:
    """`params[i]` = {"name", "weight"}; `output_allocs`: allocation -> first output index."""
    places, lines, arena = {}, [], 0
    for a in sorted(allocs, key=lambda a: a.index):
        idx = a.index
        if a.kind == "parameter":
            p = params[a.parameter]
            if p["weight"]:
                sym = f"{prefix}_w_{p['name']}"
                ty, init = typed_initializer(param_values[a.parameter])
                lines.append(f"{_q(sym)} = constant {ty} {init}, align {ALIGN}")
            else:
                sym = f"{prefix}_in_{p['name']}"
                lines.append(f"{_q(sym)} = global [{a.size} x i8] zeroinitializer, align {ALIGN}")
            places[idx] = (sym, 0)
        elif a.kind == "constant":
            sym = f"{prefix}_const{idx}"
            ty, init = typed_initializer(constants[idx])
            lines.append(f"{_q(sym)} = internal constant {ty} {init}, align {ALIGN}")
            places[idx] = (sym, 0)
        elif idx in output_allocs:
            sym = f"{prefix}_out{output_allocs[idx]}"
            lines.append(f"{_q(sym)} = global [{a.size} x i8] zeroinitializer, align {ALIGN}")
            places[idx] = (sym, 0)
        elif a.kind in ("temp", "output"):
            places[idx] = (f"{prefix}_arena", arena)
            arena += -(-a.size // ALIGN) * ALIGN
    if arena:
        lines.append(f"{_q(prefix + '_arena')} = internal global [{arena} x i8] zeroinitializer, align {ALIGN}")
    scratch_sym = None
    if scratch:
        scratch_sym = f"{prefix}_scratch"
        lines.append(f"{_q(scratch_sym)} = internal global [{scratch} x i8] zeroinitializer, align {ALIGN}")
    return MemoryPlan(places, "\n".join(lines) + "\n", scratch_sym)
