"""Link a model object with the QEMU harness into an mps2-an386 firmware ELF, and account for
what the model takes of the board.

The linker script gives the model object output sections of its own (.model.text, ...), so
its sizes are read off the ELF apart from the harness, libc and libm. A model may come as
several objects (a model object and a kernel library object compiled apart): all of them
are the model in the size report. The libc/libm code a model uses is found by linking the
model alone, its entry as the only root (`footprint`): whatever that ELF holds is the model's.
The stack between the end of .bss and the top of RAM is painted by the harness before the
measured call and scanned after it (harness/startup.S, harness.c)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Sequence

import numpy as np
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile

from specializer import cache
from specializer.errors import UserError
from specializer.capture.manifest import Manifest, Tensor, np_dtype
from specializer.target import TARGET
from specializer.tools import build_dir, find_tool

GCC_FLAGS = TARGET.gcc_flags()

SECTION_KINDS = ("text", "rodata", "data", "bss")
HANDLER_STACK = 1024  # bytes of MSP stack for the fault handlers (harness_report_fault and semihosting)
STACK_GUARD = 1024  # the MPU guard below the stack: a power of two, aligned to itself, one QEMU page


@dataclass(frozen=True)
class Firmware:
    elf: Path
    entry_addr: int  # first instruction of the model's entry function (Thumb bit cleared)
    stop_addr: int  # where the measurement window closes (harness_measure_return)
    model_sizes: dict  # section kind -> bytes of the model object(s) in the ELF
    library_sizes: dict  # section kind -> bytes of everything else: harness, libc, libm


LINKER_SCRIPT = """\
/* {board}: {flash_mib} MiB flash-like memory at {flash_at}, {ram_mib} MiB RAM at {ram_at}. */
MEMORY
{{
  FLASH (rx) : ORIGIN = {flash_origin}, LENGTH = {flash}
  RAM (rwx)  : ORIGIN = {ram_origin}, LENGTH = {ram}
}}
ENTRY({entry})
SECTIONS
{{
  .vectors : {{ KEEP(*(.vectors)) }} > FLASH
  .model.text : ALIGN(4) {{ {model_text} }} > FLASH
  .model.rodata : ALIGN(64) {{ {model_rodata} }} > FLASH
  .text : ALIGN(4) {{ *(.text .text.*) }} > FLASH
  .rodata : ALIGN(8) {{ *(.rodata .rodata.*) }} > FLASH
  /* unwind index: a module optimized without its callees' nounwind pulls in the EHABI personality */
  .ARM.exidx : {{ __exidx_start = .; *(.ARM.exidx*) __exidx_end = .; }} > FLASH
  /* one RAM data region (one copy loop); model parts are marked for the size report */
  .data : ALIGN(64) {{ __data_start = .; __model_data_start = .; {model_data}
      __model_data_end = .; *(.data .data.*) . = ALIGN(4); __data_end = .; }} > RAM AT > FLASH
  __data_load = LOADADDR(.data);
  .bss (NOLOAD) : ALIGN(64) {{ __bss_start = .; __model_bss_start = .; {model_bss}
      __model_bss_end = .; *(.bss .bss.* COMMON) . = ALIGN(4); __bss_end = .; }} > RAM
  /* after .bss: the fault handlers' stack (MSP), then a 1 KiB MPU guard (no access), then the
     stack (PSP), which grows down from the top of RAM to the guard; the harness paints that span */
  __handler_stack_top = ALIGN(__bss_end, 8) + {handler_stack};
  __stack_guard = ALIGN(__handler_stack_top, {guard});
  __stack_limit = __stack_guard + {guard};
  __stack_top = ORIGIN(RAM) + LENGTH(RAM);
  ASSERT(__stack_limit < __stack_top, "no RAM left for the stack after .data and .bss")
}}
"""


def _c_array(name: str, t: Tensor, values: np.ndarray) -> str:
    raw = np.ascontiguousarray(values, dtype=np_dtype(t.dtype)).tobytes()
    raw += b"\0" * (-len(raw) % 4)
    words = np.frombuffer(raw, dtype="<u4") if raw else np.zeros(1, "<u4")
    body = ",".join(f"0x{int(w):08x}u" for w in words)
    return f"static const uint32_t {name}[{len(words)}] = {{{body}}};\n"


def _tensor_row(t: Tensor, data_name: str) -> str:
    kind = "HARNESS_F32" if t.dtype == "float32" else "HARNESS_EXACT"
    count = int(np.prod(t.shape, dtype=np.int64))
    return (f"  {{(uint8_t *){t.symbol} + {t.offset}, {data_name}, {count}u, "
            f"{np_dtype(t.dtype).itemsize}u, {kind}}},\n")


def io_source(manifest: Manifest, vectors: Sequence[Manifest] = ()) -> str:
    """The generated half of the harness: inputs, reference outputs and the entry pointer.
    `vectors` (manifests of the same model, as Manifest.at gives them): the firmware runs the
    model on `manifest`'s input, then on each of theirs, checking every one."""
    runs = [manifest, *vectors]
    out = ['#include <stdint.h>\n#include "harness.h"\n\n']
    for sym in sorted({t.symbol for t in manifest.inputs + manifest.outputs}):
        out.append(f"extern uint8_t {sym}[];\n")
    out.append(_entry_lines(manifest.entry, limit_ticks=0, div0_trap=False))
    out.append(f"const float HARNESS_RTOL = {manifest.rtol!r}f, HARNESS_ATOL = {manifest.atol!r}f;\n\n")
    names = [f"{v}_" if v else "" for v in range(len(runs))]  # vector 0's arrays: in0, ref0 as ever
    for m, n in zip(runs, names):
        for i, t in enumerate(m.inputs):
            out.append(_c_array(f"in{n}{i}", t, t.array()))
        for i, t in enumerate(m.outputs):
            out.append(_c_array(f"ref{n}{i}", t, t.array()))
    # C forbids empty initializers: a dummy row keeps zero-input models compiling
    out.append("const struct harness_tensor harness_inputs[] = {\n")
    out += [_tensor_row(t, f"in{n}{i}") for m, n in zip(runs, names) for i, t in enumerate(m.inputs)] \
        or ["  {0, 0, 0, 0, 0},\n"]
    out.append("};\nconst struct harness_tensor harness_outputs[] = {\n")
    out += [_tensor_row(t, f"ref{n}{i}") for m, n in zip(runs, names) for i, t in enumerate(m.outputs)] \
        or ["  {0, 0, 0, 0, 0},\n"]
    out.append("};\n")
    out.append(f"const unsigned harness_n_inputs = {len(manifest.inputs)}u;\n")
    out.append(f"const unsigned harness_n_outputs = {len(manifest.outputs)}u;\n")
    out.append(f"const unsigned harness_n_vectors = {len(runs)}u;\n")
    return "".join(out)


def entry_io_source(entry: str, limit_ticks: int) -> str:
    """The generated half of the harness for a raw entry function: no inputs or outputs; it is
    called as void(void) and its return registers are printed (harness_ret). Integer division
    by zero traps: in the user's own code it is a bug worth a fault, not the hardware's 0."""
    return ('#include <stdint.h>\n#include "harness.h"\n\n' + _entry_lines(entry, limit_ticks, div0_trap=True)
            + "const float HARNESS_RTOL = 0.0f, HARNESS_ATOL = 0.0f;\n"
            "const struct harness_tensor harness_inputs[] = {{0, 0, 0, 0, 0}};\n"
            "const struct harness_tensor harness_outputs[] = {{0, 0, 0, 0, 0}};\n"
            "const unsigned harness_n_inputs = 0u, harness_n_outputs = 0u, harness_n_vectors = 1u;\n")


def _entry_lines(entry: str, limit_ticks: int, div0_trap: bool) -> str:
    if not 0 <= limit_ticks < 1 << 32:
        raise ValueError(f"timer ticks out of range: {limit_ticks}")
    return (f"extern void {entry}(void);\n"
            f"void (*const harness_entry_fn)(void) = {entry};\n"
            f"const uint32_t harness_limit_ticks = {limit_ticks}u, harness_div0_trap = {int(div0_trap)}u;\n")


RAM_ORIGIN = TARGET.ram_origin
# the board's memories, as the linker script gives them (bytes)
REGIONS = {"FLASH": ("flash", TARGET.flash_bytes, "weights, constants and code"),
           "RAM": ("RAM", TARGET.ram_bytes, "buffers, initialized data and the stack")}
_OVERFLOW = re.compile(r"region `(\w+)' overflowed by (\d+) bytes")


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB ({n:,} bytes)" if n % (1 << 20) else f"{n >> 20} MiB"


def overflow_message(ld_output: str) -> str | None:
    """The linker's region overflows, as what the model needs against what the board has."""
    parts = []
    for region, extra in _OVERFLOW.findall(ld_output):
        if region in REGIONS:
            name, size, what = REGIONS[region]
            parts.append(f"model needs {_mib(size + int(extra))} of {name}; {TARGET.board} has {_mib(size)} ({what})")
    return "; ".join(parts) or None


def _run(cmd: list, what: str) -> None:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, errors="replace")
    if r.returncode != 0:
        overflow = overflow_message(r.stderr + r.stdout)
        if overflow:
            raise UserError(f"{what} failed: {overflow}")
        out = (r.stderr or r.stdout).splitlines()
        # the linker's own reason (an undefined reference) before collect2's summary line
        lines = [ln for ln in out if "undefined reference" in ln]
        lines += [ln for ln in out if "error" in ln.lower() and "collect2" not in ln]
        lines += [ln for ln in out if "error" in ln.lower()]
        first = (lines or (r.stderr or r.stdout).strip().splitlines() or ["(no output)"])[0]
        raise UserError(f"{what} failed: {first.strip()}")


def linker_script(model_objs: Sequence[Path], entry: str = "harness_reset") -> str:
    """The linker script, with every model object's sections in the .model.* output sections."""
    names = [Path(o).name for o in model_objs]
    if len(set(names)) != len(names) or set(names) & {"startup.o", "harness.o", "io.o"}:
        raise ValueError(f"model object names must be distinct from each other and the harness: {names}")

    def clause(sections: str) -> str:
        return " ".join(f"*{n}({sections})" for n in names)

    flash, ram = (f"{REGIONS[r][1] >> 20}M" for r in ("FLASH", "RAM"))
    return LINKER_SCRIPT.format(entry=entry, board=TARGET.board, flash=flash, ram=ram,
                                flash_origin=f"0x{TARGET.flash_origin:08x}", ram_origin=f"0x{TARGET.ram_origin:08x}",
                                flash_at=hex(TARGET.flash_origin), ram_at=hex(TARGET.ram_origin),
                                flash_mib=TARGET.flash_bytes >> 20, ram_mib=TARGET.ram_bytes >> 20,
                                handler_stack=HANDLER_STACK, guard=STACK_GUARD,
                                model_text=clause(".text .text.*"),
                                model_rodata=clause(".rodata .rodata.*"), model_data=clause(".data .data.*"),
                                model_bss=clause(".bss .bss.* COMMON"))


def _objects(model_obj: Path | Sequence[Path]) -> list[Path]:
    return [Path(model_obj)] if isinstance(model_obj, (str, Path)) else [Path(o) for o in model_obj]


_HARNESS: dict[str, bytes] = {}


def _harness_object(gcc: str, src: Path, harness_dir: Path) -> bytes:
    """The harness source's object, compiled once per build directory (a comparison links a
    firmware per build and per input: a model file checked on 20 inputs made 200 copies of it)."""
    headers = b"".join(h.read_bytes() for h in sorted(harness_dir.glob("*.h")))
    key = cache.digest(src.name, src.read_bytes(), headers, " ".join(GCC_FLAGS), gcc, str(Path(gcc).stat().st_mtime_ns))
    if key not in _HARNESS:
        entry = cache.made(build_dir() / "harness" / f"{src.stem}-{key[:24]}.o", lambda tmp: _run(
            [gcc, *GCC_FLAGS, f"-I{harness_dir}", "-c", src, "-o", tmp], f"compiling harness {src.name}"))
        _HARNESS[key] = entry.read_bytes()
    return _HARNESS[key]


def build(model_obj: Path | Sequence[Path], manifest: Manifest, workdir: Path,
          libs: tuple[Path, ...] = (), vectors: Sequence[Manifest] = ()) -> Firmware:
    """Link the model object(s) with the harness. `libs` are linked too but not counted as model;
    `vectors`: more inputs the firmware checks after `manifest`'s (io_source)."""
    return build_with(model_obj, io_source(manifest, vectors), manifest.entry, workdir, libs)


def build_with(model_obj: Path | Sequence[Path], io: str, entry: str, workdir: Path,
               libs: tuple[Path, ...] = ()) -> Firmware:
    """Link the model object(s) with the harness and `io` (the generated io.c: see io_source)."""
    model_objs = _objects(model_obj)
    gcc = find_tool("arm-none-eabi-gcc")
    workdir.mkdir(parents=True, exist_ok=True)
    harness_dir = Path(str(resources.files("specializer.run") / "harness"))
    io_c = workdir / "io.c"
    io_c.write_text(io)
    objs = []
    for src in (harness_dir / "startup.S", harness_dir / "harness.c"):  # the same for every firmware
        obj = workdir / (src.stem + ".o")
        obj.write_bytes(_harness_object(gcc, src, harness_dir))
        objs.append(obj)
    obj = workdir / "io.o"
    _run([gcc, *GCC_FLAGS, f"-I{harness_dir}", "-c", io_c, "-o", obj], "compiling harness io.c")
    objs.append(obj)
    ld = workdir / "link.ld"
    ld.write_text(linker_script(model_objs))
    elf = workdir / "firmware.elf"
    _run([gcc, *GCC_FLAGS, "-nostartfiles", "-T", ld, "-Wl,--gc-sections", *objs, *model_objs, *libs,
          "-Wl,--start-group", "-lm", "-lc", "-lnosys", "-lgcc", "-Wl,--end-group", "-o", elf],
         "linking firmware")
    return _inspect(elf, entry)


@dataclass(frozen=True)
class Footprint:
    """What the model takes of the board, from the model linked alone with its entry points as
    the only roots of --gc-sections: every byte in that ELF is the model's.

    code/const/data/bss: the model objects' sections (model and kernel library code with its
    unwind index, weights and constants, initialized data, zeroed buffers); lib_flash/lib_ram: the newlib libc/libm and
    libgcc code, constants and data the model reaches (expf, memcpy, __aeabi_*)."""
    code: int
    const: int
    data: int
    bss: int
    lib_flash: int  # library code + constants + initialized data's load image
    lib_ram: int  # library .data + .bss

    @property
    def flash(self) -> int:
        """Code, constants and the load image of initialized data (copied to RAM at reset)."""
        return self.code + self.const + self.data + self.lib_flash

    @property
    def static_ram(self) -> int:
        """RAM without the stack."""
        return self.data + self.bss + self.lib_ram


def footprint(model_obj: Path | Sequence[Path], roots: Sequence[str], workdir: Path) -> Footprint:
    """The model linked without a harness, `roots` (entries first, then the I/O buffers the
    caller uses) kept: what they reach, from the model objects and the C libraries."""
    model_objs = _objects(model_obj)
    if not roots:
        raise UserError("nothing to link: the module has no entry point")
    gcc = find_tool("arm-none-eabi-gcc")
    workdir.mkdir(parents=True, exist_ok=True)
    ld = workdir / "footprint.ld"
    ld.write_text(linker_script(model_objs, entry=roots[0]).replace("KEEP(*(.vectors))", ""))
    elf = workdir / "footprint.elf"
    keep = [f"-Wl,--undefined={r}" for r in roots]  # symbols named on the command line are gc roots
    _run([gcc, *GCC_FLAGS, "-nostartfiles", "-T", ld, "-Wl,--gc-sections", *keep, *model_objs,
          "-Wl,--start-group", "-lm", "-lc", "-lnosys", "-lgcc", "-Wl,--end-group", "-o", elf],
         "linking the model")
    with open(elf, "rb") as f:
        e = ELFFile(f)
        model, lib = _model_sizes(e, e.get_section_by_name(".symtab"), elf)
        lib_flash = lib_ram = 0
        for sec in e.iter_sections():
            if not sec["sh_flags"] & SH_FLAGS.SHF_ALLOC or sec.name in (".model.text", ".model.rodata"):
                continue
            if sec.name == ".ARM.exidx":  # the unwind index of the model's functions (no nounwind on them)
                model["text"] += sec["sh_size"]
                continue
            in_ram = sec["sh_addr"] >= RAM_ORIGIN
            size = sec["sh_size"] - {".data": model["data"], ".bss": model["bss"]}.get(sec.name, 0)
            lib_ram += size if in_ram else 0
            lib_flash += size if not (in_ram and sec["sh_type"] == "SHT_NOBITS") else 0
    return Footprint(model["text"], model["rodata"], model["data"], model["bss"], lib_flash, lib_ram)


def _symbol(symtab, elf: Path, name: str) -> int:
    """A symbol's address (the Thumb bit cleared). One `symtab` section object for all lookups:
    pyelftools builds its name map once per object (a whole-table pass each time otherwise)."""
    found = symtab.get_symbol_by_name(name)
    if not found:
        raise UserError(f"{elf}: symbol '{name}' missing from the firmware")
    return found[0]["st_value"] & ~1


def _model_sizes(e: ELFFile, symtab, elf: Path) -> tuple[dict, dict]:
    def sym(name: str) -> int:
        return _symbol(symtab, elf, name)

    model, lib = dict.fromkeys(SECTION_KINDS, 0), dict.fromkeys(SECTION_KINDS, 0)
    for s in e.iter_sections():
        if s.name in (".model.text", ".model.rodata"):
            model[s.name[7:]] = s["sh_size"]
        elif s.name.lstrip(".") in SECTION_KINDS:
            lib[s.name.lstrip(".")] = s["sh_size"]
    for kind in ("data", "bss"):
        model[kind] = sym(f"__model_{kind}_end") - sym(f"__model_{kind}_start")
        lib[kind] -= model[kind]
    return model, lib


def _inspect(elf: Path, entry: str) -> Firmware:
    with open(elf, "rb") as f:
        e = ELFFile(f)
        symtab = e.get_section_by_name(".symtab")
        model, lib = _model_sizes(e, symtab, elf)
        return Firmware(elf, _symbol(symtab, elf, entry), _symbol(symtab, elf, "harness_measure_return"), model, lib)
