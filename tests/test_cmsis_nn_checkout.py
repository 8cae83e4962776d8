"""A real CMSIS-NN checkout (SPECIALIZER_CMSIS_NN) builds into libjit and gives the shim's
results: every int8 example (an example whose name has "int8" in it: mlp_int8, kws_int8, ...),
every variant, outputs compared word for word with the shim build's on QEMU. The checkout
declares the API captured models call (cmsis_api's table, checked by cmsis_checkout), and its
*_get_buffer_size functions (the wrappers' too), run on QEMU, ask for the scratch capture gives
each call.

CMSIS-NN's sources are never committed and CI has none: give checkouts with
SPECIALIZER_TEST_CMSIS_NN=/path/to/CMSIS-NN[:/another/checkout]; without it these tests skip."""

from __future__ import annotations

import os
from pathlib import Path

import subprocess

import numpy as np
import pytest

from specializer.library import cmsis, cmsis_checkout, libjit

from specializer.capture import cmsis_calls

from specializer import inputs

from specializer.run import measure, qemu

from specializer.optimize import variants
from specializer.driver.examples import EXAMPLES
from specializer.tools import find_tool, repo_root

ENV = "SPECIALIZER_TEST_CMSIS_NN"
CHECKOUTS = [p for p in os.environ.get(ENV, "").split(os.pathsep) if p]
INT8 = sorted({n for n in EXAMPLES if "int8" in n} | {p.stem for p in (repo_root() / "examples").glob("*int8*.py")})
NO_CHECKOUT = pytest.mark.skip(reason=f"no CMSIS-NN checkout given: set {ENV}=/path/to/CMSIS-NN "
                                      "(e.g. a checkout of ARM-software/CMSIS-NN v7.0.0) to run it")  # fmt: skip
CASES = ([pytest.param(c, n, id=f"{Path(c).name}-{n}") for c in CHECKOUTS for n in INT8]
         or [pytest.param("", n, id=f"no-checkout-{n}", marks=NO_CHECKOUT) for n in INT8])  # fmt: skip
ROOTS = ([pytest.param(c, id=Path(c).name) for c in CHECKOUTS]
         or [pytest.param("", id="no-checkout", marks=NO_CHECKOUT)])  # fmt: skip
DATA = Path(__file__).parent / "data" / "cmsis_nn"


def test_every_int8_example_is_a_case():
    # kws_int8 lowers conv, depthwise conv and dense onto CMSIS-NN; mlp_int8 calls libjit's s8 dot
    assert {"mlp_int8", "kws_int8"} <= set(INT8)


def run_all(model, out: Path) -> dict[str, tuple[str, list[np.ndarray]]]:
    """variant -> (pass/FAIL against JAX, the raw outputs the firmware printed)."""
    res = {}
    for v in variants.VARIANTS:
        b = variants.build(model, v, out / v)
        m = measure.measure(list(b.objects), model.manifest, b.dir)
        res[v] = (m.row.status, measure.read_outputs(m.result.stdout, model.manifest))
    return res


@pytest.mark.parametrize("checkout,name", CASES)
def test_checkout_matches_shim_in_every_variant(checkout, name, captured, tmp_path, monkeypatch):
    model = inputs.load(captured(name).model_ll)
    monkeypatch.delenv("SPECIALIZER_CMSIS_NN", raising=False)
    shim = run_all(model, tmp_path / "shim")
    monkeypatch.setenv("SPECIALIZER_CMSIS_NN", checkout)
    lib = libjit.build()
    assert lib.cmsis_nn == f"CMSIS-NN checkout at {Path(checkout).resolve()}"
    root, shim_dir = Path(checkout).resolve(), repo_root() / "cmsis_nn_shim"
    assert any(root in s.parents for s in lib.sources) and not any(shim_dir in s.parents for s in lib.sources)
    real = run_all(model, tmp_path / "checkout")
    for v in variants.VARIANTS:
        assert shim[v][0] == real[v][0] == "pass", (v, shim[v][0], real[v][0])
        assert len(shim[v][1]) == len(real[v][1])
        for a, b in zip(shim[v][1], real[v][1]):
            assert a.dtype == b.dtype and np.array_equal(a, b), v
    # the checkout's code really was linked in (not the shim's): the lto module differs
    linked = [(tmp_path / d / "lto" / "linked.ll").read_text() for d in ("shim", "checkout")]
    assert linked[0] != linked[1]


@pytest.mark.parametrize("checkout", ROOTS)
def test_checkout_declares_the_api_capture_emits(checkout):
    nn = cmsis.cmsis_nn(checkout)
    cmsis_checkout.check(nn.root, find_tool("clang-19"),
                         libjit.compile_flags(repo_root() / "libkernels", nn, cmsis.cmsis_dsp()))  # fmt: skip


# (input dims, filter dims): kws_int8's convolutions and odd shapes
BUFFER_CASES = [((1, 49, 10, 1), (64, 10, 4, 1)), ((1, 25, 5, 64), (64, 1, 1, 64)), ((1, 7, 6, 5), (6, 3, 3, 5)),
                ((2, 9, 1, 7), (3, 4, 1, 7)), ((1, 1, 1, 1), (1, 1, 1, 1)), ((1, 8, 8, 3), (5, 3, 2, 3))]




def _block(op, input_dims, filter_dims, stride, padding, ch_mult=1):
    """A conv / depthwise block's parameters as capture has them (cmsis_calls' view)."""
    n, h, w, _ = input_dims
    k, cout = filter_dims[1:3], filter_dims[0] if op == "conv" else filter_dims[3]
    out = tuple((size + sum(pad) - kk) // st + 1 for size, kk, st, pad in zip((h, w), k, stride, padding))
    return {"op": op, "input_dims": input_dims, "filter_dims": filter_dims, "output_dims": (n, *out, cout),
            "stride": stride, "padding": padding, "ch_mult": ch_mult}


# the wrappers' blocks: kws_int8's (first conv, pointwise, 3x3 depthwise) and one per form
WRAPPER_CASES = [
    _block("conv", (1, 49, 10, 1), (64, 10, 4, 1), (2, 2), ((4, 5), (1, 2))),
    _block("conv", (1, 25, 5, 64), (64, 1, 1, 64), (1, 1), ((0, 0), (0, 0))),
    _block("conv", (1, 7, 8, 6), (5, 1, 1, 6), (2, 3), ((0, 0), (0, 0))),
    _block("conv", (1, 1, 9, 4), (5, 1, 3, 4), (1, 1), ((0, 0), (1, 1))),
    _block("conv", (1, 1, 9, 3), (5, 1, 3, 3), (1, 1), ((0, 0), (1, 1))),
    _block("dw", (1, 25, 5, 64), (1, 3, 3, 64), (1, 1), ((1, 1), (1, 1))),
    _block("dw", (1, 8, 7, 6), (1, 3, 3, 6), (2, 2), ((2, 1), (1, 2))),
    _block("dw", (1, 7, 6, 7), (1, 5, 3, 7), (1, 1), ((2, 2), (1, 1))),
    _block("dw", (1, 6, 6, 5), (1, 3, 3, 10), (1, 1), ((1, 1), (1, 1)), ch_mult=2),
    _block("dw", (2, 5, 5, 4), (1, 3, 3, 4), (1, 1), ((1, 1), (1, 1))),
]


def _wrapper_size_call(i: int, b: dict) -> str:
    dims = {k: ", ".join(map(str, b[k + "_dims"])) for k in ("input", "filter", "output")}
    (top, _), (left, _) = b["padding"]
    window = f"{{{b['stride'][1]}, {b['stride'][0]}}}, {{{left}, {top}}}, {{1, 1}}, {{-128, 127}}"
    if b["op"] == "conv":
        params, fn = f"const cmsis_nn_conv_params p = {{0, 0, {window}}};", "arm_convolve_wrapper_s8_get_buffer_size"
    else:
        params = f"const cmsis_nn_dw_conv_params p = {{0, 0, {b['ch_mult']}, {window}}};"
        fn = "arm_depthwise_conv_wrapper_s8_get_buffer_size"
    return (f"{{ {params} const cmsis_nn_dims id = {{{dims['input']}}}, fd = {{{dims['filter']}}}, "
            f"od = {{{dims['output']}}}; io_str(\"wrapper{i}\"); io_hex32((uint32_t){fn}(&p, &id, &fd, &od)); "
            f"io_str(\"\\n\"); }}")


@pytest.mark.parametrize("checkout", ROOTS)
def test_checkout_buffer_sizes_are_what_capture_gives(checkout, tmp_path):
    """The checkout's arm_convolve_s8_get_buffer_size, arm_fully_connected_s8_get_buffer_size and
    the two wrappers' *_get_buffer_size, compiled for Cortex-M4 and run on QEMU, against the
    scratch capture sizes each call with (and the form capture expects each wrapper to pick)."""
    nn = cmsis.cmsis_nn(checkout)
    flags = [*libjit.compile_flags(repo_root() / "libkernels", nn, cmsis.cmsis_dsp()), f"-I{DATA}"]
    calls = []
    for i, (ind, fd) in enumerate(BUFFER_CASES):
        calls.append(f"{{ const cmsis_nn_dims id = {{{', '.join(map(str, ind))}}}, fd = {{{', '.join(map(str, fd))}}};"
                     f" io_str(\"case{i}\"); io_hex32((uint32_t)arm_convolve_s8_get_buffer_size(&id, &fd));"
                     f" io_hex32((uint32_t)arm_fully_connected_s8_get_buffer_size(&fd)); io_str(\"\\n\"); }}")
    calls += [_wrapper_size_call(i, b) for i, b in enumerate(WRAPPER_CASES)]
    main = tmp_path / "main.c"
    main.write_text('#include "arm_nnfunctions.h"\n#include "io.h"\nint main(void)\n{\n  '
                    + "\n  ".join(calls) + '\n  io_str("end\\n");\n  io_flush();\n  return 0;\n}\n')
    sources = [main, DATA / "io.c",
               *(s for s in nn.sources if s.name in ("arm_convolve_get_buffer_sizes_s8.c",
                                                      "arm_depthwise_conv_get_buffer_sizes_s8.c",
                                                      "arm_fully_connected_get_buffer_sizes_s8.c"))]  # fmt: skip
    assert len(sources) == 5, "the checkout has no Source/*/arm_*_get_buffer_sizes_s8.c"
    objs = []
    for s in sources:
        objs.append(str(tmp_path / f"{s.stem}.o"))
        subprocess.run([find_tool("clang-19"), *flags, "-c", str(s), "-o", objs[-1]], check=True)
    elf = tmp_path / "sizes.elf"
    subprocess.run([find_tool("arm-none-eabi-gcc"), "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard",
                    "-mfpu=fpv4-sp-d16", "-nostartfiles", "-T", str(DATA / "link.ld"), "-Wl,--gc-sections",
                    str(DATA / "startup.S"), *objs, "-lc", "-lgcc", "-o", str(elf)], check=True)  # fmt: skip
    r = subprocess.run(qemu.qemu_command(elf), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines[-1:] == ["end"], r.stdout[-300:]
    got = {ln.split()[0]: [int(w, 16) for w in ln.split()[1:]] for ln in lines[:-1]}
    for i, (ind, fd) in enumerate(BUFFER_CASES):
        # capture's conv scratch, and its fully connected context (no buffer: kernel sums are Helium's)
        assert got[f"case{i}"] == [cmsis_calls.convolve_s8_buffer_size(fd, ind[3]), 0], (ind, fd)
    forms = []
    for i, b in enumerate(WRAPPER_CASES):
        kind = "convolve" if b["op"] == "conv" else "depthwise_conv"
        size, form = (getattr(cmsis_calls, f"{kind}_wrapper_s8_{what}") for what in ("buffer_size", "form"))
        assert got[f"wrapper{i}"] == [size(b)], b
        forms.append(form(b))
    assert forms == ["arm_convolve_s8", "arm_convolve_1x1_s8_fast", "arm_convolve_1x1_s8", "arm_convolve_1_x_n_s8",
                     "arm_convolve_s8", "arm_depthwise_conv_3x3_s8", "arm_depthwise_conv_s8_opt",
                     "arm_depthwise_conv_s8_opt", "arm_depthwise_conv_s8", "arm_depthwise_conv_s8"]
    assert [got[f"wrapper{i}"][0] for i in (0, 3, 6, 7)] == [2 * 40 * 2, 2 * 12 * 2, 6 * 9 * 2, 7 * 15 * 2]
