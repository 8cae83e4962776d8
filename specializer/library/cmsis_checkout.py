"""The check a CMSIS-NN checkout must pass: it declares the API of cmsis_api.py.

A checkout given with SPECIALIZER_CMSIS_NN must declare what captured models call: each
function of cmsis_api.FUNCTIONS with these parameter types, each field of cmsis_api.STRUCTS
with its type at the byte offset cmsis_api.layout gives it. One C file of function-pointer
initializations and `_Static_assert`s, all derived from those tables and compiled against the
checkout's own headers with the library's flags, checks it; clang's first error names what
differs, and the build stops with one line (an older checkout, v6.0.0: `arm_convolve_s8`
without upscale_dims).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from specializer.errors import UserError
from specializer.library.cmsis_api import FUNCTIONS, STRUCTS, VERSION, layout, sizeof


def probe_source() -> tuple[str, dict[int, str]]:
    """The C file that compiles only against v7.0.0's API, and line -> what that line checks."""
    lines = ['#include <stddef.h>', '#include "arm_nnfunctions.h"', '#include "arm_nnsupportfunctions.h"']
    what: dict[int, str] = {}

    def add(line: str, item: str) -> None:
        lines.append(line)
        what[len(lines)] = item

    for f in FUNCTIONS:
        types = ", ".join(t for t, _ in f.params)
        add(f"{f.ret} (*const probe_{f.name})({types}) = {f.name};", f"function {f.name}")
    for struct in STRUCTS:
        for ctype, field, offset in layout(struct):
            item = f"struct {struct}: field {field}"
            add(f'_Static_assert(offsetof({struct}, {field}) == {offset}, "{struct}.{field}");', item)
            add(f"_Static_assert(__builtin_types_compatible_p(__typeof__((({struct} *)0)->{field}), {ctype}), "
                f'"{struct}.{field} type");', item + " type")
        add(f'_Static_assert(sizeof({struct}) == {sizeof(struct)}, "sizeof {struct}");', f"struct {struct}: size")
    return "\n".join(lines) + "\n", what


def _expected(what: str) -> str:
    kind, _, name = what.partition(" ")
    if kind == "function":
        f = next(f for f in FUNCTIONS if f.name == name)
        return f"{f.ret} {f.prototype()}"
    struct, _, item = name.partition(": ")
    if item == "size":
        return f"{struct} is {sizeof(struct)} bytes"
    field = item.removeprefix("field ").removesuffix(" type")
    ctype, _, offset = next(x for x in layout(struct) if x[1] == field)
    return f"{struct}.{field} is {ctype}" if item.endswith(" type") else f"{struct}.{field} at byte {offset}"


_DIAG = re.compile(r"^(.*?):(\d+):\d+: (?:fatal )?error: (.*)$", re.MULTILINE)


def check(root: Path, clang: str, flags: list[str]) -> None:
    """Raise one UserError line when the checkout at `root` (compiled with `flags`, its include
    paths among them) does not declare what cmsis_api's FUNCTIONS and STRUCTS say."""
    src, what = probe_source()
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.c"
        probe.write_text(src)
        r = subprocess.run([clang, *flags, "-fsyntax-only", "-Werror=incompatible-function-pointer-types",
                            str(probe)], check=False, capture_output=True, text=True)  # fmt: skip
    if r.returncode == 0:
        return
    advice = (f"captured models call CMSIS-NN {VERSION}'s API (the shim's): use a {VERSION} checkout "
              "or a later one with the same API")
    m = _DIAG.search(r.stderr)
    if m and m.group(1) == str(probe) and int(m.group(2)) in what:
        item = what[int(m.group(2))]
        found = "is not declared" if "undeclared" in m.group(3) else "differs"
        raise UserError(f"CMSIS-NN checkout at {root}: {item} {found} (CMSIS-NN {VERSION}: "
                        f"{_expected(item)}); {advice}")
    first = (f"{Path(m.group(1)).name if m.group(1) == str(probe) else m.group(1)}:{m.group(2)}: {m.group(3)}"
             if m else (r.stderr.strip().splitlines() or ["no output"])[0])
    raise UserError(f"CMSIS-NN checkout at {root}: its headers do not compile for Cortex-M4 ({first}); {advice}")
