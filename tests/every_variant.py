"""The check the model-level QEMU tests share: a captured model built five ways, run on QEMU, and
every variant passing against its reference (exact: equal to it value for value)."""

from specializer import inputs
from specializer.driver.compare import compare
from specializer.optimize import variants


def every_variant_passes(model_ll, tmp_path, exact: bool):
    comp = compare(inputs.load(model_ll), tmp_path / "cmp", variants.Options.of(unroll_candidates=()))
    assert [r.variant for r in comp.rows] == list(variants.VARIANTS)
    for r in comp.rows:
        assert r.status == "pass", (r.variant, r)
        if exact:
            assert r.max_abs_err == 0, r.variant
    return comp
