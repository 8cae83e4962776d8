"""`specialize run FILE.ll --entry NAME`: what calling one function of any module needs -- its
signature checked, the instruction limit, its return value decoded (the build and run itself:
driver/run.py's run_entry).

The function takes no arguments and returns one of RETURN_TYPES; the harness calls it as
void(void) and reads the AAPCS-VFP return registers right after it returns (r0, r1:r0 for i64,
s0, d0 = s1:s0 for double). It is built as the `lto` variant (the module with the libjit
kernels, internalized but for the entry, O2) and accounted as `run` accounts a model. Before
the run, static checks (staticcheck.py) warn on stderr about what QEMU would not fault on.
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass

import llvmlite.binding as llvm

from specializer.llvm import module

from specializer.run import qemu
from specializer.errors import UserError
from specializer.inputs import Model

# LLVM return type -> bytes of the value in the return registers (AAPCS-VFP)
RETURN_TYPES = {"void": 0, "i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "float": 4, "double": 8, "ptr": 4}
SUPPORTED = "void, i1, i8, i16, i32, i64, float, double or ptr"
TICKS_PER_INSN = qemu.TICKS_PER_INSN
SLACK_INSNS = 8  # the harness's instructions between starting the timer and the call
DEFAULT_MAX_INSNS = 1_000_000_000
MAX_INSNS = int(((1 << 32) - 1) / TICKS_PER_INSN) - SLACK_INSNS  # timer0 counts 32 bits of 25 MHz ticks


@dataclass(frozen=True)
class Entry:
    name: str
    returns: str  # one of RETURN_TYPES


@dataclass(frozen=True)
class EntryRow:
    entry: str
    returns: str
    value: str | None  # the returned value as text (None for void)
    text: int
    rodata: int
    data: int
    bss: int
    lib_flash: int
    lib_ram: int
    stack: int
    insns: int
    cycles: int | None  # None with method="icount"

    @property
    def flash(self) -> int:
        return self.text + self.rodata + self.data + self.lib_flash

    @property
    def ram(self) -> int:
        return self.data + self.bss + self.lib_ram + self.stack

    def as_dict(self) -> dict:
        return asdict(self) | {"flash": self.flash, "ram": self.ram}


def _describe(f) -> str:
    t = f.global_value_type
    params = [str(e) for e in list(t.elements)[1:]]
    if t.is_function_vararg:
        params.append("...")
    return f"{list(t.elements)[0]} ({', '.join(params)})"


def find_entry(model: Model, name: str) -> Entry:
    """The function `name` of the module, if run can call it; else one line saying why."""
    mod = module.parse(model.text, str(model.path))
    defined = [f for f in mod.functions if not f.is_declaration and not f.name.startswith("llvm.")]
    f = next((f for f in defined if f.name == name), None)
    if f is None:
        callable_ = [g.name for g in defined if _describe(g).endswith(" ()") and g.linkage == llvm.Linkage.external]
        if callable_:
            have = f"functions with no arguments: {', '.join(callable_)}"
        else:
            have = ("it defines no external function without arguments"
                    + (f" (it defines: {', '.join(f'{g.name} {_describe(g)}' for g in defined)})" if defined else ""))
        raise UserError(f"{model.path}: no function '{name}' is defined; {have}")
    sig = _describe(f)
    ret = str(list(f.global_value_type.elements)[0])
    if not sig.endswith(" ()") or ret not in RETURN_TYPES:
        raise UserError(f"{model.path}: '{name}' has the signature {sig}; run --entry calls a function with no "
                        f"arguments returning {SUPPORTED}")
    if f.linkage != llvm.Linkage.external:
        raise UserError(f"{model.path}: '{name}' is not external (linkage {f.linkage.name}): the harness cannot "
                        "call it; drop 'internal'/'private' from its definition")
    return Entry(name, ret)


def decode(stdout: str, returns: str) -> str | None:
    """The returned value as text, from the harness's `return r0 r1` and `return-fp s0 s1` lines."""
    if returns == "void":
        return None
    regs = {}
    for line in stdout.splitlines():
        parts = line.split()
        if parts and parts[0] in ("return", "return-fp") and len(parts) == 3:
            regs[parts[0]] = (int(parts[1], 16), int(parts[2], 16))
    if len(regs) != 2:
        raise UserError("the firmware printed no return registers ('return' lines)")
    (r0, r1), (s0, s1) = regs["return"], regs["return-fp"]
    if returns == "float":
        return f"{struct.unpack('<f', struct.pack('<I', s0))[0]!r} (bits 0x{s0:08x})"
    if returns == "double":
        return f"{struct.unpack('<d', struct.pack('<II', s0, s1))[0]!r} (bits 0x{s1:08x}{s0:08x})"
    if returns == "ptr":
        return f"0x{r0:08x}"
    bits = 64 if returns == "i64" else int(returns[1:])
    raw = (r1 << 32 | r0) if bits == 64 else r0
    raw &= (1 << bits) - 1  # AAPCS leaves the bits above a narrow value unspecified
    signed = raw - (1 << bits) if bits > 1 and raw >> (bits - 1) else raw
    width = max(1, (bits + 3) // 4)
    return f"{signed}" + (f" (0x{raw:0{width}x})" if bits > 1 else "")


def limit_ticks(max_insns: int) -> int:
    if not 1 <= max_insns <= MAX_INSNS:
        raise UserError(f"--max-insns {max_insns}: must be between 1 and {MAX_INSNS:,} (the instruction limit is "
                        "a 32-bit timer at 3.2 ticks per instruction)")
    return int((max_insns + SLACK_INSNS) * TICKS_PER_INSN + 0.999)
