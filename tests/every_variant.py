"""The check the model-level QEMU tests share: a captured model built five ways, run on QEMU, and
every variant passing against its reference (exact: equal to it value for value); and the two
steps of the tests that keep a model file as source text (a quantize() model as a user writes one)."""

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


def jitted(model, values: bool = False):
    """A quantize() model compiled as one program, called with keyword arguments (`values`: its
    values, inputs then every step's output, not its outputs). Eager, each small op of the blocks
    compiles on its own (7.6 s against 0.9 s for a 20-step model); under values_only() its
    products are one dot each, the same integers."""
    import jax

    from specializer.quant import blocks

    fn = jax.jit(lambda a: model.values(**a) if values else model(**a))

    def call(**args):
        with blocks.values_only():
            return fn(args)

    return call


def int_values(model, **args) -> list:
    """jitted(model, values=True)(**args), once."""
    return jitted(model, values=True)(**args)


def model_namespace(source: str, filename: str) -> dict:
    """A model file's source run as Python: its globals (the model, its weights, its data)."""
    ns: dict = {}
    exec(compile(source, filename, "exec"), ns)
    return ns


def captured_source(source: str, name: str, tmp_path):
    """The model file `source` written as tmp_path/NAME.py and captured (function `name`)."""
    from specializer.capture.capture import capture

    src = tmp_path / f"{name}.py"
    src.write_text(source)
    return capture(src, name, tmp_path / "cap")
