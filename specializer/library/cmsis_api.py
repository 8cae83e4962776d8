"""The CMSIS-NN API captured models and libjit call, and the check a real checkout must pass.

Capture writes CMSIS-NN calls into model.ll (specializer/capture/cmsis_calls.py) before any CMSIS-NN
is chosen: the calls, the constant structs they point at and the scratch sizes are those of
ONE API, CMSIS-NN v7.0.0's, which the shim implements. A checkout given with
SPECIALIZER_CMSIS_NN must declare the same: each function below with these parameter types,
each struct field capture writes at the byte offset it writes it to. One C file of
function-pointer initializations and `_Static_assert`s, compiled against the checkout's own
headers with the library's flags, checks it; clang's first error names what differs, and the
build stops with one line (an older checkout, v6.0.0: `arm_convolve_s8` without upscale_dims).
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from specializer.errors import UserError

VERSION = "v7.0.0"

_DIMS = "const cmsis_nn_dims *"
_S8 = "const int8_t *"


@dataclass(frozen=True)
class Function:
    name: str
    ret: str
    params: tuple[tuple[str, str], ...]  # (C type, parameter name as CMSIS-NN's header has it)

    def prototype(self) -> str:
        return f"{self.name}({', '.join(n for _, n in self.params)})"


def _layer(params_type: str, quant_type: str) -> tuple[tuple[str, str], ...]:
    params = params_type.removeprefix("cmsis_nn_")
    return (("const cmsis_nn_context *", "ctx"), (f"const {params_type} *", params),
            (f"const {quant_type} *", "quant_params"), (_DIMS, "input_dims"), (_S8, "input_data"),
            (_DIMS, "filter_dims"), (_S8, "filter_data"), (_DIMS, "bias_dims"),
            ("const int32_t *", "bias_data"))  # fmt: skip


_OUT = ((_DIMS, "output_dims"), ("int8_t *", "output_data"))
_POOL = (("const cmsis_nn_context *", "ctx"), ("const cmsis_nn_pool_params *", "pool_params"), (_DIMS, "input_dims"),
         (_S8, "input_data"), (_DIMS, "filter_dims")) + _OUT


def _i32(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple(("const int32_t", n) for n in names)

_STATUS = "arm_cmsis_nn_status"

# Every CMSIS-NN function a captured model or libjit's own kernels call, as v7.0.0 declares it.
FUNCTIONS = (
    Function("arm_convolve_s8", _STATUS,
             _layer("cmsis_nn_conv_params", "cmsis_nn_per_channel_quant_params") + ((_DIMS, "upscale_dims"),) + _OUT),
    Function("arm_convolve_s8_get_buffer_size", "int32_t", ((_DIMS, "input_dims"), (_DIMS, "filter_dims"))),
    Function("arm_depthwise_conv_s8", _STATUS,
             _layer("cmsis_nn_dw_conv_params", "cmsis_nn_per_channel_quant_params") + _OUT),
    Function("arm_fully_connected_s8", _STATUS,
             _layer("cmsis_nn_fc_params", "cmsis_nn_per_tensor_quant_params") + _OUT),
    Function("arm_fully_connected_s8_get_buffer_size", "int32_t", ((_DIMS, "filter_dims"),)),
    # the activation blocks (cmsis_calls_act.py)
    Function("arm_avgpool_s8", _STATUS, _POOL),
    Function("arm_avgpool_s8_get_buffer_size", "int32_t", (("const int", "dim_dst_width"), ("const int", "ch_src"))),
    Function("arm_max_pool_s8", _STATUS, _POOL),
    Function("arm_elementwise_add_s8", _STATUS,
             ((_S8, "input_1_vect"), (_S8, "input_2_vect")) + _i32("input_1_offset", "input_1_mult", "input_1_shift",
             "input_2_offset", "input_2_mult", "input_2_shift", "left_shift") + (("int8_t *", "output"),)
             + _i32("out_offset", "out_mult", "out_shift", "out_activation_min", "out_activation_max", "block_size")),
    Function("arm_softmax_s8", "void",
             ((_S8, "input"),) + _i32("num_rows", "row_size", "mult", "shift", "diff_min") + (("int8_t *", "output"),)),
    Function("arm_nn_mat_mult_nt_t_s8_s32", _STATUS,
             ((_S8, "lhs"), (_S8, "rhs"), ("int32_t *", "dst"), ("const int32_t", "lhs_rows"),
              ("const int32_t", "rhs_rows"), ("const int32_t", "rhs_cols"), ("const int32_t", "lhs_offset"),
              ("const int32_t", "dst_idx_offset"))),
)  # fmt: skip

# The structs capture writes as constant globals, each field a 32-bit word (an i32 or a
# pointer) at 4 x its position: the order cmsis_calls writes them in.
LAYOUTS = {
    "cmsis_nn_context": ("buf", "size"),
    "cmsis_nn_dims": ("n", "h", "w", "c"),
    "cmsis_nn_conv_params": ("input_offset", "output_offset", "stride.w", "stride.h", "padding.w",
                             "padding.h", "dilation.w", "dilation.h", "activation.min", "activation.max"),
    "cmsis_nn_dw_conv_params": ("input_offset", "output_offset", "ch_mult", "stride.w", "stride.h",
                                "padding.w", "padding.h", "dilation.w", "dilation.h", "activation.min",
                                "activation.max"),
    "cmsis_nn_pool_params": ("stride.w", "stride.h", "padding.w", "padding.h", "activation.min", "activation.max"),
    "cmsis_nn_fc_params": ("input_offset", "filter_offset", "output_offset", "activation.min", "activation.max"),
    "cmsis_nn_per_channel_quant_params": ("multiplier", "shift"),
    "cmsis_nn_per_tensor_quant_params": ("multiplier", "shift"),
}  # fmt: skip


def probe_source() -> tuple[str, dict[int, str]]:
    """The C file that compiles only against v7.0.0's API, and line -> what that line checks."""
    lines = ['#include <stddef.h>', '#include "arm_nnfunctions.h"', '#include "arm_nnsupportfunctions.h"']
    what: dict[int, str] = {}
    for f in FUNCTIONS:
        types = ", ".join(t for t, _ in f.params)
        lines.append(f"{f.ret} (*const probe_{f.name})({types}) = {f.name};")
        what[len(lines)] = f"function {f.name}"
    for struct, fields in LAYOUTS.items():
        for i, field in enumerate(fields):
            lines.append(f'_Static_assert(offsetof({struct}, {field}) == {4 * i}, "{struct}.{field}");')
            what[len(lines)] = f"struct {struct}: field {field}"
        lines.append(f'_Static_assert(sizeof({struct}) == {4 * len(fields)}, "sizeof {struct}");')
        what[len(lines)] = f"struct {struct}: size"
    return "\n".join(lines) + "\n", what


def _expected(what: str) -> str:
    kind, _, name = what.partition(" ")
    if kind == "function":
        f = next(f for f in FUNCTIONS if f.name == name)
        return f"{f.ret} {f.prototype()}"
    struct, _, field = name.partition(": ")
    fields = LAYOUTS[struct]
    if field == "size":
        return f"{struct} is {4 * len(fields)} bytes"
    return f"{struct}.{field.removeprefix('field ')} at byte {4 * fields.index(field.removeprefix('field '))}"


_DIAG = re.compile(r"^(.*?):(\d+):\d+: (?:fatal )?error: (.*)$", re.M)


def check(root: Path, clang: str, flags: list[str]) -> None:
    """Raise one UserError line when the checkout at `root` (compiled with `flags`, its include
    paths among them) does not declare what FUNCTIONS and LAYOUTS say."""
    src, what = probe_source()
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.c"
        probe.write_text(src)
        r = subprocess.run([clang, *flags, "-fsyntax-only", "-Werror=incompatible-function-pointer-types",
                            str(probe)], capture_output=True, text=True)  # fmt: skip
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
