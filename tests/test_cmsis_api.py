"""cmsis_api: the CMSIS-NN v7.0.0 API captured models call, one table. The shim declares exactly
it (cmsis_checkout's check, derived from the table), the calls capture emits match it, and a
checkout with another API (v6.0.0's arm_convolve_s8, a struct laid out differently, a field of
another type, a missing function) stops the library build with one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from specializer.library import cmsis, cmsis_api, cmsis_checkout, libjit

from specializer.capture import cmsis_calls
from specializer.errors import UserError
from specializer.capture.libcalls import Operand
from specializer.capture.thunks import Const, Slice
from specializer.tools import find_tool, repo_root

SHIM = repo_root() / "cmsis_nn_shim"

V7_CONV = """                                    const int32_t *bias_data,
                                    const cmsis_nn_dims *upscale_dims,
                                    const cmsis_nn_dims *output_dims,"""
V6_CONV = """                                    const int32_t *bias_data,
                                    const cmsis_nn_dims *output_dims,"""


def headers_only(root: Path) -> Path:
    """A checkout's Include/ and Source/ made of the shim's headers under CMSIS-NN's names."""
    (root / "Include" / "Internal").mkdir(parents=True)
    (root / "Source" / "ConvolutionFunctions").mkdir(parents=True)
    for h in (SHIM / "include").glob("*.h"):
        shutil.copy(h, root / "Include" / h.name)
    for api in ("arm_nnfunctions.h", "arm_nnsupportfunctions.h"):
        shutil.copy(SHIM / "include" / api.replace("arm_", "shim_"), root / "Include" / api)
    return root


def check(root: Path) -> None:
    nn = cmsis.cmsis_nn(str(root))
    cmsis_checkout.check(nn.root, find_tool("clang-19"), libjit.compile_flags(repo_root() / "libkernels", nn,
                                                                               cmsis.cmsis_dsp()))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


def test_the_shim_declares_the_v7_api(tmp_path):
    check(headers_only(tmp_path / "nn"))  # raises on any difference


def one_line_error(root: Path, monkeypatch, tmp_path) -> str:
    with pytest.raises(UserError) as e:
        check(root)
    msg = str(e.value)
    assert "\n" not in msg and f"CMSIS-NN checkout at {root.resolve()}" in msg and "v7.0.0" in msg
    # the library build stops on it too, before compiling anything
    monkeypatch.setattr(libjit, "build_dir", lambda: tmp_path / "build")
    with pytest.raises(UserError) as e2:
        libjit.build(cmsis_nn_path=str(root))
    assert str(e2.value) == msg
    assert not (tmp_path / "build" / "libjit").exists() or not list((tmp_path / "build" / "libjit").glob("*.bc"))
    return msg


def test_v6_convolve_signature_is_refused(tmp_path, monkeypatch):
    root = headers_only(tmp_path / "nn")
    edit(root / "Include" / "arm_nnfunctions.h", V7_CONV, V6_CONV)  # CMSIS-NN v6.0.0's arm_convolve_s8
    msg = one_line_error(root, monkeypatch, tmp_path)
    assert "function arm_convolve_s8 differs" in msg and "bias_data, upscale_dims, output_dims" in msg


def test_struct_layout_is_checked(tmp_path, monkeypatch):
    root = headers_only(tmp_path / "nn")
    edit(root / "Include" / "shim_nn_types.h", "    int32_t input_offset;\n    int32_t filter_offset;\n",
         "    int32_t filter_offset;\n    int32_t input_offset;\n")
    msg = one_line_error(root, monkeypatch, tmp_path)
    assert "struct cmsis_nn_fc_params: field input_offset differs" in msg and "at byte 0" in msg


def test_field_type_is_checked(tmp_path, monkeypatch):
    root = headers_only(tmp_path / "nn")
    edit(root / "Include" / "shim_nn_types.h", "    void *buf;\n", "    int32_t buf;\n")  # same offsets
    msg = one_line_error(root, monkeypatch, tmp_path)
    assert "struct cmsis_nn_context: field buf type differs" in msg and "cmsis_nn_context.buf is void *" in msg


def test_missing_function_is_named(tmp_path, monkeypatch):
    root = headers_only(tmp_path / "nn")
    edit(root / "Include" / "arm_nnfunctions.h", "int32_t arm_fully_connected_s8_get_buffer_size(",
         "int32_t arm_fully_connected_s8_get_buffer_size_old(")
    msg = one_line_error(root, monkeypatch, tmp_path)
    assert "function arm_fully_connected_s8_get_buffer_size is not declared" in msg


def test_headers_that_do_not_compile(tmp_path, monkeypatch):
    root = headers_only(tmp_path / "nn")
    edit(root / "Include" / "shim_nn_types.h", "#include <stdint.h>\n", "#include <stdint.h>\nfloat16_t broken;\n")
    msg = one_line_error(root, monkeypatch, tmp_path)
    assert "headers do not compile for Cortex-M4" in msg and "shim_nn_types.h" in msg and "float16_t" in msg


def test_layout_is_thumbv7em():
    """Byte offsets from the table's field types: int32_t and pointers 4 bytes, nested structs in place."""
    conv = {name: off for _, name, off in cmsis_api.layout("cmsis_nn_conv_params")}
    assert conv == {"input_offset": 0, "output_offset": 4, "stride": 8, "padding": 16, "dilation": 24, "activation": 32}
    assert cmsis_api.sizeof("cmsis_nn_conv_params") == 40 and cmsis_api.sizeof("cmsis_nn_dw_conv_params") == 44
    assert cmsis_api.sizeof("cmsis_nn_context") == 8


def test_structs_and_calls_are_given_by_name():
    act = {"max": 127, "min": -128}  # any order: by name
    assert cmsis_api.struct_const("cmsis_nn_fc_params", output_offset=3, activation=act, filter_offset=0,
                                  input_offset=1) == ("[5 x i32]", "[i32 1, i32 0, i32 3, i32 -128, i32 127]")
    assert cmsis_api.struct_const("cmsis_nn_context", buf="{scratch}", size=8) == ("{ ptr, i32 }",
                                                                                   "{ ptr {scratch}, i32 8 }")
    with pytest.raises(TypeError, match=r"missing \['filter_offset'\]"):
        cmsis_api.struct_const("cmsis_nn_fc_params", input_offset=1, output_offset=3, activation=act)
    with pytest.raises(TypeError, match=r"unknown \['bias_offset'\]"):
        cmsis_api.struct_const("cmsis_nn_fc_params", input_offset=1, output_offset=3, activation=act,
                               filter_offset=0, bias_offset=0)
    with pytest.raises(TypeError, match="by name"):  # a nested struct positionally: (min, max) or (max, min)?
        cmsis_api.struct_const("cmsis_nn_fc_params", input_offset=1, output_offset=3, activation=(-128, 127),
                               filter_offset=0)
    assert cmsis_api.call_args("arm_fully_connected_s8_get_buffer_size", filter_dims="f") == ("f",)
    with pytest.raises(TypeError, match="missing"):
        cmsis_api.call_args("arm_convolve_s8_get_buffer_size", filter_dims="f")


def _struct_of(c_type: str) -> str:
    return c_type.removeprefix("const ").removesuffix(" *")


def _bytes(llvm_type: str) -> int:
    """Bytes of capture's flat struct types: [N x i32] or { ptr, i32, ... }, each word 4 bytes."""
    return 4 * (int(llvm_type[1:].split()[0]) if llvm_type.startswith("[") else llvm_type.count(",") + 1)


def test_emitted_calls_have_the_v7_parameters_and_layouts():
    """The calls capture emits: one argument per parameter of FUNCTIONS, each struct the size
    the table gives it, and upscale_dims NULL."""
    functions = {f.name: f for f in cmsis_api.FUNCTIONS}
    s8 = lambda dims, alloc: Operand(Slice(alloc, 0, 4096), "s8", dims, tuple(reversed(range(len(dims)))))  # noqa: E731
    s32 = lambda n, alloc: Operand(Slice(alloc, 0, 4 * n), "s32", (n,), (0,))  # noqa: E731
    conv = {"op": "convolve_s8", "input_dims": (1, 5, 6, 3), "filter_dims": (4, 3, 3, 3),
            "output_dims": (1, 5, 6, 4), "padding": ((1, 1), (1, 1)), "stride": (1, 1), "activation": (-128, 127),
            "input_offset": 3, "output_offset": -2, "multipliers": [1 << 30] * 4, "shifts": [-3] * 4}  # fmt: skip
    dw = dict(conv, op="depthwise_conv_s8", filter_dims=(1, 3, 3, 3), output_dims=(1, 5, 6, 3), ch_mult=1,
              multipliers=[1 << 30] * 3, shifts=[-3] * 3)
    fc = {"op": "fully_connected_s8", "batch": 1, "in_features": 8, "out_features": 3, "activation": (-128, 127),
          "input_offset": 1, "output_offset": 0, "multipliers": [1 << 30], "shifts": [-2]}  # fmt: skip
    calls = [cmsis_calls.lower("c", conv, [s8((1, 5, 6, 3), 1), s8((4, 3, 3, 3), 2), s32(4, 3)], s8((1, 5, 6, 4), 4)),
             cmsis_calls.lower("d", dw, [s8((1, 5, 6, 3), 1), s8((1, 3, 3, 3), 2), s32(3, 3)], s8((1, 5, 6, 3), 4)),
             cmsis_calls.lower("f", fc, [s8((1, 8), 1), s8((3, 8), 2), s32(3, 3)], s8((1, 3), 4))]  # fmt: skip
    # capture calls the form each wrapper picks for the shapes (what the wrapper would call)
    assert [c.function for c in calls] == ["arm_convolve_s8", "arm_depthwise_conv_3x3_s8", "arm_fully_connected_s8"]
    assert [c.note for c in calls[:2]] == ["the form arm_convolve_wrapper_s8 picks",
                                           "the form arm_depthwise_conv_wrapper_s8 picks"]
    # a form the wrapper would pick that is not exact: the general function, upscale_dims NULL
    pw = dict(conv, filter_dims=(4, 1, 1, 3), output_dims=(1, 6, 7, 4), padding=((0, 1), (0, 1)))
    dw2 = dict(dw, output_dims=(1, 5, 7, 3), padding=((1, 1), (1, 3)))
    calls += [cmsis_calls.lower("p", pw, [s8((1, 5, 6, 3), 1), s8((4, 1, 1, 3), 2), s32(4, 3)], s8((1, 6, 7, 4), 4)),
              cmsis_calls.lower("e", dw2, [s8((1, 5, 6, 3), 1), s8((1, 3, 3, 3), 2), s32(3, 3)], s8((1, 5, 7, 3), 4))]
    assert [c.function for c in calls[3:]] == ["arm_convolve_s8", "arm_depthwise_conv_s8"]
    assert "arm_convolve_1x1_s8_fast assumes no bottom/right padding" in calls[3].note
    assert "arm_depthwise_conv_3x3_s8 reads a window's middle column" in calls[4].note
    assert calls[3].args[[n for _, n in functions["arm_convolve_s8"].params].index("upscale_dims")] is None
    assert calls[3].scratch == cmsis_calls.convolve_s8_buffer_size((4, 1, 1, 3), 3) and calls[4].scratch == 0
    for call in calls:
        params = functions[call.function].params
        assert len(call.args) == len(params) and call.ret == "i32"
        for (c_type, _), arg in zip(params, call.args):
            if isinstance(arg, Const):
                assert _bytes(arg.type) == cmsis_api.sizeof(_struct_of(c_type)), (call.function, c_type)
