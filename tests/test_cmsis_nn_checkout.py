"""A real CMSIS-NN checkout (SPECIALIZER_CMSIS_NN) builds into libjit and gives the shim's
results: every int8 example (an example whose name has "int8" in it), every variant, outputs
compared word for word with the shim build's on QEMU.

CMSIS-NN's sources are never committed and CI has none: give checkouts with
SPECIALIZER_TEST_CMSIS_NN=/path/to/CMSIS-NN[:/another/checkout]; without it these tests skip."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from specializer import inputs, libjit, measure, variants
from specializer.examples import EXAMPLES
from specializer.tools import repo_root

ENV = "SPECIALIZER_TEST_CMSIS_NN"
CHECKOUTS = [p for p in os.environ.get(ENV, "").split(os.pathsep) if p]
INT8 = sorted({n for n in EXAMPLES if "int8" in n} | {p.stem for p in (repo_root() / "examples").glob("*int8*.py")})
NO_CHECKOUT = pytest.mark.skip(reason=f"no CMSIS-NN checkout given: set {ENV}=/path/to/CMSIS-NN "
                                      "(e.g. a checkout of ARM-software/CMSIS-NN v7.0.0) to run it")  # fmt: skip
CASES = ([pytest.param(c, n, id=f"{Path(c).name}-{n}") for c in CHECKOUTS for n in INT8]
         or [pytest.param("", n, id=f"no-checkout-{n}", marks=NO_CHECKOUT) for n in INT8])  # fmt: skip


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
