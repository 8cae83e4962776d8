"""A float model's tolerance from what float32 costs its program (capture/tolerance.py), the
float64 run it rests on (capture/float64_run.py), and a real error still failing under it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from specializer.capture import float64_run, tolerance
from specializer.driver import fuzz


MODEL = '''
import jax.numpy as jnp
import numpy as np
from jax import lax


def amplifying(x, w):
    def step(h, row):
        h = (jnp.log(jnp.abs(h) + 2.0) * 1.8) ** 3 / (jnp.sqrt(jnp.abs(row)) + 0.3) - 2.0
        return h, h
    _, hs = lax.scan(step, jnp.full((8,), 0.5, jnp.float32), x)
    y = lax.conv_general_dilated(hs.reshape(1, 10, 8, 1), w, (1, 1), "SAME",
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return y - jnp.mean(y)


rng = np.random.default_rng(3)
amplifying.example_inputs = {"x": rng.normal(size=(10, 8)).astype(np.float32)}
amplifying.weights = {"w": rng.normal(size=(3, 3, 1, 4)).astype(np.float32)}
'''

# ten steps through log, sqrt, a division and a cube (float32 rounding grows at every step), then
# a convolution: float32 is ~3e-6 off float64, relative to a tenth of the largest output
_NS: dict = {}
exec(MODEL, _NS)
_amplifying = _NS["amplifying"]
ARGS = [_amplifying.example_inputs["x"], _amplifying.weights["w"]]
RNG = np.random.default_rng(3)


def _atol(outs):
    return max([1e-6] + [float(np.abs(o).max()) * 0.1 for o in outs])


def test_the_float64_run_widens_every_float32_value_control_flow_included():
    def f(x, w):
        h = lax.scan(lambda c, r: (jnp.tanh(c * 0.5 + r), c + r), jnp.zeros((3,), jnp.float32), x)[1]
        y = jax.nn.relu(h @ w).astype(jnp.float32)  # a cast to float32 the program wrote
        z = lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 1.1), (0, y))[1]
        return lax.cond(z.sum() > 0, lambda a: a * 2, lambda a: a, z), jnp.arange(3, dtype=jnp.float32)

    x, w = RNG.random((4, 3)).astype(np.float32), RNG.random((3, 3)).astype(np.float32)
    wide = float64_run.run(f, [x, w])
    assert [o.dtype for o in wide] == [np.float64, np.float64]
    with jax.enable_x64(True):  # the same program written in float64 by hand
        h = np.zeros(3)
        hs = []
        for r in x.astype(np.float64):
            hs.append(h + r)
            h = np.tanh(h * 0.5 + r)
        # the program's constants are what float32 made of them (1.1f), its arithmetic float64's
        z = np.maximum(np.array(hs) @ w.astype(np.float64), 0) * np.float64(np.float32(1.1)) ** 3
    np.testing.assert_allclose(wide[0], z * 2 if z.sum() > 0 else z, rtol=1e-12)
    narrow = np.asarray(jax.jit(f)(x, w)[0])
    assert np.abs(narrow - wide[0]).max() > 0  # float32 was really left behind


def test_what_the_float64_run_cannot_do_is_said():
    f = lambda x: lax.bitcast_convert_type(x, jnp.int32)  # noqa: E731
    with pytest.raises(float64_run.Unsupported, match="bitcast_convert_type"):
        float64_run.run(f, [np.ones(3, np.float32)])
    rtol, basis = tolerance.derive([np.ones(3, np.float32)], None, 1e-6, "a float's bits reinterpreted")
    assert (rtol, basis) == (1e-5, "default (no float64 run: a float's bits reinterpreted)")


def test_a_program_that_grows_rounding_gets_a_wider_tolerance_and_says_why():
    outs32 = [np.asarray(jax.jit(_amplifying)(*ARGS))]
    err = tolerance.float32_error(outs32, float64_run.run(_amplifying, ARGS), _atol(outs32))
    assert 2.6e-6 < err < 5e-6
    rtol, basis = tolerance.derive(outs32, float64_run.run(_amplifying, ARGS), _atol(outs32))
    assert rtol == 2e-5 and basis == "4x the float32 reference's own error against a float64 run"


def test_a_plain_network_keeps_the_default():
    x, w = RNG.normal(size=(4, 16)).astype(np.float32), RNG.normal(size=(16, 8)).astype(np.float32)
    f = lambda x, w: jax.nn.relu(x @ w)  # noqa: E731
    outs32 = [np.asarray(jax.jit(f)(x, w))]
    assert tolerance.derive(outs32, float64_run.run(f, [x, w]), _atol(outs32)) == (1e-5, "")


@pytest.mark.parametrize("need, step", [(1.1e-5, 2e-5), (2e-5, 2e-5), (2.01e-5, 5e-5), (7e-5, 1e-4),
                                        (3e-3, 5e-3)])
def test_tolerances_come_in_steps_of_1_2_5(need, step):
    assert tolerance._step_up(need) == step


def test_one_flipped_bit_in_one_output_still_fails_under_the_wider_tolerance():
    """A real miscompile: one output element with one bit flipped (the top mantissa bit, or the
    sign) is a mismatch even under the program's widened tolerance."""
    ref = [np.asarray(jax.jit(_amplifying)(*ARGS))]
    rtol = tolerance.derive(ref, float64_run.run(_amplifying, ARGS), _atol(ref))[0]
    assert rtol > 1e-5 and fuzz.matches([ref[0].copy()], ref, rtol)
    for bit in (22, 31):
        got = ref[0].copy()
        flat = got.reshape(-1).view(np.uint32)
        flat[int(np.argmax(np.abs(ref[0]).reshape(-1)))] ^= np.uint32(1 << bit)
        assert not fuzz.matches([got], ref, rtol), bit



def test_capture_records_the_tolerance_every_variant_passes_and_a_flipped_bit_fails(tmp_path):
    """On QEMU: the model.json capture writes holds the widened tolerance and its basis, the
    comparison says which bound it used and every variant passes; one bit flipped in one reference
    output makes every variant FAIL."""
    import json
    import subprocess
    import sys

    (tmp_path / "amplifying.py").write_text(MODEL)
    cli = [sys.executable, "-m", "specializer.cli"]
    subprocess.run([*cli, "capture", f"{tmp_path / 'amplifying.py'}:amplifying", "-o", tmp_path / "m"],
                   check=True, capture_output=True)
    manifest = json.loads((tmp_path / "m" / "model.json").read_text())
    assert manifest["rtol"] == 2e-5
    assert manifest["rtol_basis"] == "4x the float32 reference's own error against a float64 run"

    def compare(out):
        return subprocess.run([*cli, "--all-args", tmp_path / "m" / "model.ll", "-o", tmp_path / out, "-j", "1", "--no-cache",
                               "--unroll-threshold", "llvm"], capture_output=True, text=True)

    ok = compare("ok")
    assert ok.returncode == 0, ok.stderr
    assert ("rel err against JAX: every variant <= 2e-05 (tolerance: 4x the float32 reference's own "
            "error against a float64 run)") in " ".join(ok.stdout.split())  # notes are wrapped

    data = manifest["outputs"][0]["data"]
    k = int(np.argmax(np.abs(data)))
    data[k] = float(np.array([data[k]], np.float32).view(np.uint32).__xor__(np.uint32(1 << 22)).view(np.float32)[0])
    (tmp_path / "m" / "model.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    bad = compare("bad")
    assert bad.returncode != 0
    rows = [ln for ln in bad.stdout.splitlines() if ln.startswith("| ") and "variant" not in ln and "---" not in ln]
    assert len(rows) == 5 and all("| FAIL" in ln for ln in rows), bad.stdout
