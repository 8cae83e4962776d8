"""Differential testing (specializer/driver/fuzz.py): a fixed set of seeded random JAX programs,
captured as one batch and run in every variant on QEMU against op-by-op JAX.
scripts/fuzz.py runs thousands."""

import re

import numpy as np
import pytest

from specializer.driver import fuzz

# One batch covering the grammar (float and int32 programs): s8/u8 -> s32 dots in the batched
# and transposed layouts, grouped and dilated convolutions, scan, while, cond, fori_loop,
# dynamic slices and updates, gathers, shifts and bit operations, casts.
# 393: a grouped convolution with input dilation (a transposed convolution: refused until
# libjit_conv_transpose2d_f32)
SEEDS = (78, 95, 54, 8, 41, 31, 0, 1, 361, 393)  # 361: an int8 dot of a tanh result before _STEP
# the default run's share of it (the rest with --slow): scan and fori_loop with s8/u8 dots and a
# conv (78), while, cond and a gather (take_along_axis, 95), dynamic slices and updates, argmax
# (54), the int8 dot of a tanh (361, the generator's rule for a float cast to an integer). The
# transposed convolution (393) runs with --slow: its kernel's own QEMU tests are in
# test_conv_transpose_f32.py
QUICK = (78, 95, 54, 361)


def test_programs_are_deterministic_and_varied():
    assert fuzz.program(7) == fuzz.program(7)
    texts = [fuzz.program(s) for s in range(60)]
    assert len(set(texts)) == 60
    for construct in ("np.int32)", "lax.fori_loop", "lax.while_loop", "lax.scan", "lax.cond",
                      "conv_general_dilated", "feature_group_count=2", "jnp.int8)", "jnp.uint8)",
                      "preferred_element_type=jnp.int32", "lax.dynamic_slice", "jnp.take", ">> 2"):
        assert any(construct in t for t in texts), construct


def test_steps_of_floats_apply_to_the_inputs_only():
    # an ulp of libm difference at a cast, floor or round boundary is not the tool's error
    for seed in range(200):
        text = fuzz.program(seed)
        if "np.int32)" in text.split("example_inputs")[-1]:
            continue  # integer programs: every step is exact
        steps = r"(?:jnp\.floor|jnp\.round)\((?:jnp\.clip\()?(\w+)|jnp\.clip\((?:jnp\.abs\()?(\w+)\)? \* 20\.0"
        for m in re.finditer(steps, text):
            assert (m.group(1) or m.group(2)) in ("x", "y"), (seed, m.group(0))


def test_batch_calls_every_program_on_its_own_inputs():
    src = fuzz.batch_source([3, 4])
    assert "def p3(x, y):" in src and "def p4(x, y):" in src
    assert "def f(x3, y3, x4, y4):\n    return p3(x3, y3) + p4(x4, y4)" in src
    assert "'x4': p4.example_inputs['x']" in src


def test_matches_is_the_harness_rule_per_program():
    ref = [np.array([1.0, -2.0, np.nan, np.inf], np.float32), np.array([3, -4], np.int32)]
    assert fuzz.matches([r.copy() for r in ref], ref)
    close = ref[0] * np.float32(1 + 4e-6)
    assert fuzz.matches([close, ref[1]], ref)
    assert not fuzz.matches([ref[0] * np.float32(1.001), ref[1]], ref)
    assert not fuzz.matches([ref[0], ref[1] + np.array([0, 1], np.int32)], ref)  # integers exactly
    moved = np.array([1.0, -2.0, np.inf, np.nan], np.float32)
    assert not fuzz.matches([moved, ref[1]], ref)  # NaN and inf in place
    # the tolerance's scale is the program's largest float: 1e-6 off a 0.0 passes next to a 2.0
    assert fuzz.matches([np.array([1e-6, 2.0], np.float32)], [np.array([0.0, 2.0], np.float32)])


@pytest.mark.parametrize("seeds", [QUICK, pytest.param(tuple(s for s in SEEDS if s not in QUICK), marks=pytest.mark.slow)],
                         ids=["quick", "rest"])
def test_random_programs_match_jax_in_every_variant(seeds, tmp_path):
    res = fuzz.check(list(seeds), tmp_path)
    assert {s: o.status for s, o in res.items()} == {s: "pass" for s in seeds}, res


def test_a_construct_capture_cannot_lower_is_refused_by_name(tmp_path, monkeypatch):
    # the grammar has no construct capture refuses now: a program with a 3-D convolution stands in
    conv3d = "\n".join([
        "def {name}(x, y):",
        "    v = lax.conv_general_dilated(jnp.reshape(x, (1, 1, 2, 4, 8)), jnp.ones((1, 1, 1, 2, 2), jnp.float32),"
        " (1, 1, 1), 'VALID')",
        "    return (v, y + 1.0,)", "", "",
        "rng = np.random.default_rng(0)",
        "{name}.example_inputs = {{'x': rng.normal(size=(8, 8)).astype(np.float32),"
        " 'y': rng.normal(size=(8, 8)).astype(np.float32)}}", ""])
    monkeypatch.setattr(fuzz, "program", lambda seed, name="f": conv3d.format(name=name))
    o = fuzz.check([5], tmp_path)[5]
    assert o.status == "refused", o
    assert o.detail.startswith("unsupported op: convolution") and "3 spatial dimensions" in o.detail


def test_script_summary_groups_refusals_and_names_failing_seeds():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "fuzz.py"
    spec = importlib.util.spec_from_file_location("fuzz_script", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    line = ("unsupported op: convolution 'convolution-base-dilated' (f32[1,2,8,2]{3,2,1,0} * f32[3,2,1,4]{3,2,1,0} "
            "-> f32[1,3,10,4]{3,2,1,0}): input (base) dilation or window reversal")
    rows = [dict(seed=1, status="pass", detail=""), dict(seed=2, status="refused", detail=line),
            dict(seed=3, status="refused", detail=line.replace("[1,2,8,2]", "[1,4,8,2]")),
            dict(seed=4, status="mismatch", detail="all-args")]
    text = script.summary(rows)
    assert text.splitlines()[0] == "4 programs: mismatch 1 (25.0%), pass 1 (25.0%), refused 2 (50.0%)"
    assert "refused 2: unsupported op: convolution: input (base) dilation or window reversal  (seeds 2, 3)" in text
    assert "mismatch seeds: 4" in text
