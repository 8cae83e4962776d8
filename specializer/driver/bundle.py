"""`specialize bundle`: one variant's build of a captured model, packaged for a firmware.

Like Glow's bundles: DIR/<fn>.o (and the same object as DIR/lib<fn>.a), DIR/<fn>.h (entry
prototype, I/O symbols with C types, shapes and dtypes, memory sizes, the libc/libm symbols left
undefined, section names), DIR/main.c (fills the inputs with the captured example, calls the
entry, prints the outputs) and DIR/qemu/ (a startup file and linker script to try it on QEMU's
mps2-an386 with newlib's semihosting).

The object is the variant's own build (variants.build, with a section per global), relinked
with `ld -r --gc-sections` from the entry and I/O buffers, every other symbol made local: it
exports nothing a firmware could clash with (a `separate` build's CMSIS functions included),
and it needs nothing of this tool's harness. Its sizes are the comparison's accounting
(firmware.footprint) of that very object; its peak stack and a check against JAX's outputs
come from running it under the harness on QEMU (measure.measure), unless told not to.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from elftools.elf.elffile import ELFFile

from specializer import files

from specializer.run import firmware, measure

from specializer.optimize import variants
from specializer.errors import UserError
from specializer.inputs import Model
from specializer.capture.manifest import Manifest, Tensor, np_dtype
from specializer.target import TARGET
from specializer.tools import find_tool

DEFAULT_VARIANT = variants.ALL_ARGS
# numpy dtype -> C element type; bool is one byte 0/1; others are handed over as raw bits
C_TYPES = {"float32": "float", "float64": "double", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t",
           "uint16": "uint16_t", "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t",
           "uint64": "uint64_t", "bool": "uint8_t"}
RAW_TYPES = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t"}
GCC_TARGET = " ".join(TARGET.arch_flags())
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Bundle:
    dir: Path
    object: Path
    library: Path
    header: Path
    main: Path
    variant: str
    undefined: tuple[str, ...]  # what the object leaves to the toolchain's libc/libm/libgcc
    footprint: firmware.Footprint
    arena: int  # bytes of the model's shared temporary buffer
    io_bytes: int  # bytes of the input and output buffers
    row: measure.Row | None  # the run on QEMU (stack, instructions, check); None with run=False


def c_type(dtype: str) -> tuple[str, int]:
    """(C element type, elements per numpy element): complex as (re, im) pairs of its float."""
    if dtype in C_TYPES:
        return C_TYPES[dtype], 1
    dt = np_dtype(dtype)
    if dt.kind == "c":
        return {8: "float", 16: "double"}[dt.itemsize], 2
    return RAW_TYPES[dt.itemsize], 1


def _count(t: Tensor) -> int:
    return int(np.prod(t.shape, dtype=np.int64)) * c_type(t.dtype)[1]


def _tool(name: str) -> str:
    return find_tool(name)


def _run(cmd: list, what: str) -> None:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, errors="replace")
    if r.returncode:
        first = (r.stderr or r.stdout).strip().splitlines() or ["(no output)"]
        raise UserError(f"{what} failed: {first[0]}")


def package(objects: list[Path], roots: list[str], out: Path) -> None:
    """One relocatable object: what `roots` reach of `objects`, only `roots` global."""
    tmp = out.with_name(out.name + ".ld-r.o")
    keep = [f"--undefined={r}" for r in roots]
    _run([_tool("arm-none-eabi-ld"), "-r", "--gc-sections", *keep, *objects, "-o", tmp], "relinking the bundle")
    _run([_tool("arm-none-eabi-objcopy"), *(f"--keep-global-symbol={r}" for r in roots), tmp, out],
         "localizing the bundle's symbols")
    tmp.unlink()


def _symbols(obj: Path) -> tuple[tuple[str, ...], dict[str, int]]:
    """(undefined global symbols, size of every defined data object) of an object."""
    with open(obj, "rb") as f:
        e = ELFFile(f)
        undef, sizes = set(), {}
        for s in e.get_section_by_name(".symtab").iter_symbols():
            if not s.name:
                continue
            if s["st_shndx"] == "SHN_UNDEF" and s["st_info"]["bind"] != "STB_LOCAL":
                undef.add(s.name)
            elif s["st_info"]["type"] == "STT_OBJECT":
                sizes[s.name] = s["st_size"]
    return tuple(sorted(undef)), sizes


def bundle(model: Model, out: Path, variant: str = DEFAULT_VARIANT, options: variants.Options = variants.Options(),
           run: bool = True, timeout: float = 120, progress=None) -> Bundle:
    if model.manifest is None:
        raise UserError(f"{model.path}: not a captured model (no model.json next to it): a bundle needs the "
                        "entry's inputs and outputs; capture the JAX function with 'specialize capture'")
    if variant not in variants.VARIANTS:
        raise UserError(f"unknown variant '{variant}' (have: {', '.join(variants.VARIANTS)})")
    m = model.manifest
    for name in [m.entry, m.function] + [t.symbol for t in m.inputs + m.outputs]:
        if not _IDENT.match(name):
            raise UserError(f"{model.path}: '{name}' is no C identifier: a bundle's header cannot name it")
    say = progress or (lambda text: None)
    name = m.function
    roots = measure.roots(m)
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="specializer-bundle-") as tmp:
        work = Path(tmp)
        say(f"building {variant}")
        b = variants.build(model, variant, work / "build", options, data_sections=True)
        obj = work / f"{name}.o"
        package(list(b.objects), roots, obj)
        fp = firmware.footprint([obj], roots, work / "footprint")
        row = None
        if run:
            say(f"running {variant} on QEMU")
            row = measure.measure([obj], m, work / "run", timeout=timeout).row
            if row.status != "pass":
                raise UserError(f"{model.path}: the {variant} build does not reproduce JAX's outputs on QEMU "
                                f"(max rel err {row.max_rel_err:.2e}, tolerance {m.rtol:g}); no bundle written")
        undefined, sizes = _symbols(obj)
        lib = work / f"lib{name}.a"
        _run([_tool("arm-none-eabi-ar"), "rcsD", lib, obj], "archiving the bundle")  # D: no timestamps
        arena = sizes.get(f"{name}_arena", 0)
        io_bytes = sum(sizes.get(s, 0) for s in {t.symbol for t in m.inputs + m.outputs})
        bun = Bundle(out, out / obj.name, out / lib.name, out / f"{name}.h", out / "main.c", variant, undefined,
                     fp, arena, io_bytes, row)
        qemu_dir = Path(str(resources.files("specializer") / "bundle_qemu"))
        out.mkdir(parents=True, exist_ok=True)
        (out / "qemu").mkdir(exist_ok=True)
        files.write_all([(bun.object, obj.read_bytes()), (bun.library, lib.read_bytes()),
                         (bun.header, header(m, bun)), (bun.main, main_c(m)),
                         (out / "qemu" / "startup.S", (qemu_dir / "startup.S").read_text()),
                         (out / "qemu" / "link.ld", (qemu_dir / "link.ld").read_text())])
    return bun


# --------------------------------------------------------------------------- the header


def _macro(name: str) -> str:
    return re.sub(r"[^A-Z0-9_]", "_", name.upper())


def _shape_text(t: Tensor) -> str:
    return f"{t.dtype}[{','.join(map(str, t.shape))}]"


def _declarations(m: Manifest) -> list[str]:
    """The I/O buffers: typed arrays when one tensor fills its symbol from offset 0, else bytes."""
    users: dict[str, list[Tensor]] = {}
    for t in m.inputs + m.outputs:
        users.setdefault(t.symbol, []).append(t)
    out = []
    for sym in sorted(users):
        ts = users[sym]
        if len(ts) == 1 and ts[0].offset == 0:
            ctype, per = c_type(ts[0].dtype)
            dims = "".join(f"[{d}]" for d in ts[0].shape) or "[1]"
            dims += "[2]" if per == 2 else ""
            out.append(f"extern {ctype} {sym}{dims};")
        else:
            out.append(f"extern uint8_t {sym}[]; /* holds {len(ts)} tensors at byte offsets */")
    return out


def _tensor_macros(prefix: str, kind: str, i: int, t: Tensor, shared: bool) -> list[str]:
    ctype, _ = c_type(t.dtype)
    p = f"{prefix}_{kind}{i}"
    where = f"((uint8_t *){t.symbol} + {t.offset})" if shared or t.offset else f"{t.symbol}"
    lines = [f"/* {kind.lower()} {i} '{t.name}': {_shape_text(t)}, {t.nbytes} bytes"
             + (", stored as (re, im) pairs" if np_dtype(t.dtype).kind == "c" else "")
             + (", raw bits" if ctype in RAW_TYPES.values() and t.dtype not in C_TYPES else "") + " */",
             f"#define {p}_NAME \"{t.name}\"",
             f"#define {p}_SYMBOL {t.symbol}",
             f"#define {p} (({ctype} *){where})",
             f"#define {p}_CTYPE {ctype}",
             f"#define {p}_DTYPE \"{t.dtype}\"",
             f"#define {p}_RANK {len(t.shape)}"]
    if t.shape:
        lines.append(f"#define {p}_SHAPE {{{', '.join(map(str, t.shape))}}}")
    lines += [f"#define {p}_COUNT {_count(t)}u", f"#define {p}_BYTES {t.nbytes}u", ""]
    return lines


def _wrap(text: str, prefix: str = " * ", width: int = 100) -> list[str]:
    import textwrap

    return [prefix + ln for ln in textwrap.wrap(text, width - len(prefix), break_on_hyphens=False)] or [prefix]


def header(m: Manifest, b: Bundle) -> str:
    name, p = m.function, _macro(m.function)
    fp, row = b.footprint, b.row
    stack = f"{row.stack}" if row else "not measured (bundled with --no-run)"
    ram = f"{fp.static_ram + row.stack} bytes" if row else f"{fp.static_ram} bytes + the stack"
    undefined = ", ".join(b.undefined) or "none"
    c = ["/* " + f"{name}.h: the JAX function '{name}', variant {b.variant}, by 'specialize bundle'.",
         " * For Cortex-M4F (thumbv7em, hard float, fpv4-sp-d16). "
         f"Object: {name}.o (the same in lib{name}.a).", " *"]
    c += _wrap(f"Call: fill the inputs, call {m.entry}(), read the outputs. The buffers are the object's "
               "globals (static memory plan, no allocation, not reentrant); enable the FPU (CPACR) and "
               "copy .data / zero .bss before the first call, as any C startup does.")
    c += [" *"]
    c += _wrap(f"Left undefined for the toolchain's C library (newlib: -lm -lc -lgcc): {undefined}.")
    c += [" *"]
    c += _wrap(f"Sections: code .text.{m.entry} and .text.<function>; weights and constants .rodata.<symbol> "
               f"(flash, e.g. '*{name}.o(.rodata .rodata.*)' or '*lib{name}.a:*(.rodata .rodata.*)' in your "
               f"linker script); input/output buffers .bss.<symbol>, the arena .bss.{name}_arena (RAM); "
               ".data.* initialized RAM data (load image in flash). The object is built with 32-bit enums "
               "and has no enum at its interface: link with -Wl,--no-enum-size-warning.")
    c += [" *", " * Memory (this object linked alone with newlib, --gc-sections; bytes):",
          f" *   flash {fp.flash}: code {fp.code}, weights and constants {fp.const}, .data image {fp.data}, "
          f"libc/libm {fp.lib_flash}"]
    c += _wrap(f"RAM {ram}: .data {fp.data}, .bss {fp.bss} (arena {b.arena}, inputs and outputs "
               f"{b.io_bytes}), libc/libm {fp.lib_ram}, peak stack {stack}", " *   ")
    if row:
        c += _wrap(f"checked on QEMU mps2-an386 against JAX's outputs: {row.status}; {row.insns} "
                   f"instructions, {row.cycles} est. cycles (TRM-weighted) per call", " *   ")
    c += [" */", f"#ifndef {p}_BUNDLE_H", f"#define {p}_BUNDLE_H", "", "#include <stdint.h>", "",
          "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
          f"#define {p}_FLASH_BYTES {fp.flash}u /* code + constants + .data image + libc/libm it uses */",
          f"#define {p}_STATIC_RAM_BYTES {fp.static_ram}u /* .data + .bss + libc/libm data */"]
    if row:
        c.append(f"#define {p}_STACK_BYTES {row.stack}u /* peak stack of one call, measured on QEMU */")
        c.append(f"#define {p}_RAM_BYTES {fp.static_ram + row.stack}u /* static RAM + peak stack */")
    c += [f"#define {p}_ARENA_BYTES {b.arena}u /* temporaries, inside .bss */",
          f"#define {p}_NUM_INPUTS {len(m.inputs)}", f"#define {p}_NUM_OUTPUTS {len(m.outputs)}", "",
          "/* the entry: runs the model once on the input buffers, writes the output buffers */",
          f"void {m.entry}(void);", "", "/* input and output buffers (the object defines them) */"]
    c += _declarations(m) + [""]
    shared = {t.symbol for t in m.inputs + m.outputs
              if sum(u.symbol == t.symbol for u in m.inputs + m.outputs) > 1 or t.offset}
    for i, t in enumerate(m.inputs):
        c += _tensor_macros(p, "INPUT", i, t, t.symbol in shared)
    for i, t in enumerate(m.outputs):
        c += _tensor_macros(p, "OUTPUT", i, t, t.symbol in shared)
    c += ["#ifdef __cplusplus", "}", "#endif", f"#endif /* {p}_BUNDLE_H */", ""]
    return "\n".join(c)


# --------------------------------------------------------------------------- main.c


def _c_literal(v, dtype: str) -> str:
    if dtype in ("float32", "float64") or np_dtype(dtype).kind == "c":
        f = float(v)
        if np.isnan(f):
            return "NAN"
        if np.isinf(f):
            return "INFINITY" if f > 0 else "-INFINITY"
        text = str(np.float32(f)) if dtype != "float64" and np_dtype(dtype).itemsize != 16 else repr(f)
        if "e" not in text and "." not in text:
            text += ".0"
        return text + ("f" if c_type(dtype)[0] == "float" else "")
    if dtype == "int64":
        return f"{int(v)}LL" if int(v) != -(1 << 63) else "(-9223372036854775807LL - 1)"
    if dtype == "int32" and int(v) == -(1 << 31):
        return "(-2147483647 - 1)"
    return f"{int(v)}{'u' if dtype.startswith('uint') else ''}"


def _raw_words(t: Tensor) -> np.ndarray:
    """A tensor's example values as the element-sized raw integers C copies in."""
    return np.ascontiguousarray(t.array()).view(np.dtype(f"<u{np_dtype(t.dtype).itemsize}")).reshape(-1)


def _print_loop(p: str, i: int, t: Tensor) -> list[str]:
    ctype, _ = c_type(t.dtype)
    head = f'    printf("output {i} \'{t.name}\' {_shape_text(t)}:\\n");'
    body = [head, f"    for (unsigned i = 0; i < {p}_OUTPUT{i}_COUNT; i++) {{"]
    v = f"{p}_OUTPUT{i}[i]"
    if ctype == "float":
        body += ["        uint32_t bits;", f"        memcpy(&bits, &{v}, sizeof bits);",
                 f'        printf("  [%u] %.9g (0x%08lx)\\n", i, (double){v}, (unsigned long)bits);']
    elif ctype == "double":
        body += ["        uint64_t bits;", f"        memcpy(&bits, &{v}, sizeof bits);",
                 f'        printf("  [%u] %.17g (0x%08lx%08lx)\\n", i, {v}, (unsigned long)(bits >> 32), '
                 '(unsigned long)bits);']
    elif t.dtype in C_TYPES and ctype.startswith("int"):
        body += [f'        printf("  [%u] %lld\\n", i, (long long){v});']
    elif t.dtype in C_TYPES:
        body += [f'        printf("  [%u] %llu\\n", i, (unsigned long long){v});']
    else:  # raw bits of a type C has no name for (bfloat16, float16, ...)
        body += [f'        printf("  [%u] 0x%llx\\n", i, (unsigned long long){v});']
    return body + ["    }"]


def main_c(m: Manifest) -> str:
    name, p = m.function, _macro(m.function)
    c = [f"/* Example: fill {name}'s inputs with the example captured in model.json, call {m.entry}(),",
         " * print the outputs (floats with their bits). Plain C and printf: any newlib target runs it. */",
         "#include <math.h>", "#include <stdint.h>", "#include <stdio.h>", "#include <string.h>", "",
         f'#include "{name}.h"', ""]
    for i, t in enumerate(m.inputs):
        ctype, per = c_type(t.dtype)
        if t.dtype in C_TYPES or per == 2:
            flat = np.asarray(t.array()).reshape(-1)
            if per == 2:
                flat = np.stack([flat.real, flat.imag], axis=-1).reshape(-1)
            vals = [_c_literal(v, t.dtype) for v in flat]
        else:
            ctype, vals = RAW_TYPES[np_dtype(t.dtype).itemsize], [f"0x{int(w):x}u" for w in _raw_words(t)]
        rows = [", ".join(vals[k:k + 8]) for k in range(0, len(vals), 8)] or ["0"]
        c.append(f"/* input {i} '{t.name}': {_shape_text(t)} */")
        c.append(f"static const {ctype} example_input{i}[{max(len(vals), 1)}] = {{")
        c += [f"    {r}," for r in rows] + ["};", ""]
    for i, t in enumerate(m.outputs):
        c += [f"static void print_output{i}(void) {{"] + _print_loop(p, i, t) + ["}", ""]
    c += ["int main(void) {"]
    c += [f"    memcpy({p}_INPUT{i}, example_input{i}, {p}_INPUT{i}_BYTES);" for i in range(len(m.inputs))]
    c += [f"    {m.entry}();"]
    c += [f"    print_output{i}();" for i in range(len(m.outputs))]
    c += ["    return 0;", "}", ""]
    return "\n".join(c)


# --------------------------------------------------------------------------- reading main.c's output


_VALUE = re.compile(r"^  \[(\d+)\] (\S+)(?: \((0x[0-9a-f]+)\))?$")
_HEAD = re.compile(r"^output (\d+) ")


def read_printed(stdout: str, m: Manifest) -> list[np.ndarray]:
    """The outputs main.c printed, as arrays (floats from their bits, exactly)."""
    got: dict[int, list] = {}
    current = None
    for line in stdout.splitlines():
        h = _HEAD.match(line)
        if h:
            current = got.setdefault(int(h.group(1)), [])
            continue
        v = _VALUE.match(line)
        if v and current is not None:
            current.append(int(v.group(3), 16) if v.group(3) else int(v.group(2), 0))
    if sorted(got) != list(range(len(m.outputs))):
        raise UserError(f"main.c printed outputs {sorted(got)}, expected {len(m.outputs)}")
    out = []
    for i, t in enumerate(m.outputs):
        dt = np_dtype(t.dtype)
        ctype, _ = c_type(t.dtype)
        if ctype in ("float", "double") or t.dtype not in C_TYPES:
            raw = np.asarray(got[i], dtype=f"<u{8 if ctype == 'double' else dt.itemsize}")
            out.append(raw.view(dt).reshape(t.shape))
        else:
            out.append(np.asarray(got[i], dtype=np.int64).astype(dt).reshape(t.shape))
    return out


def link_commands(b: Bundle, elf: str = "model.elf") -> list[list[str]]:
    """The gcc command that links main.c and the bundle for QEMU's mps2-an386 (docs/user-guide.md's)."""
    d = b.dir
    return [["arm-none-eabi-gcc", *GCC_TARGET.split(), "-O2", "--specs=rdimon.specs", "-nostartfiles",
             "-Wl,--gc-sections", "-Wl,--no-enum-size-warning", "-T", str(d / "qemu" / "link.ld"),
             f"-I{d}", str(d / "qemu" / "startup.S"), str(b.main), str(b.library), "-lm", "-o", elf]]

