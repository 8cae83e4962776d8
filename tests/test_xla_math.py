"""The math library XLA's IR calls (libkernels/xla_math.c, newlib's libm) on QEMU, per function,
against float64 truth and against JAX; capture's refusal of a function nothing provides; s32 dots.

One captured program (tests/data/xla_math.py) evaluates every function over one fixed array of
domain samples and edges, run once on QEMU. JAX's own values come from XLA on the host, which
flushes subnormals to zero: they are compared only away from the subnormal range."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.special as sp

from specializer.capture import libcalls, runtime_symbols
from specializer.capture.capture import capture
from specializer.errors import UserError
from specializer.driver.run import run_model
from specializer.run.measure import read_outputs
from specializer.capture.thunks import Slice

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import xla_math  # noqa: E402

# Max ulp error against the float64 truth: (result normal, result subnormal). These are the
# table in docs/kernels.md. Where XLA's HLO composes a function from others (exp2 = exp(x ln 2), sinh,
# cosh, erfc, erf_inv, logistic as polynomials or formulas in HLO), the bound is that formula's,
# which XLA's own code has too.
BOUNDS = {
    "exp": (1, 1), "expm1": (2, 1), "exp2": (34, 1), "log": (1, 1), "log1p": (1, 1), "log2": (2, 1),
    "log10": (2, 1), "sqrt": (0.5, 0.5), "rsqrt": (0.5, 0.5), "cbrt": (2.5, 1), "sin": (1, 1), "cos": (1, 1),
    "tan": (1, 1), "asin": (1.5, 1), "acos": (1.5, 1), "atan": (1, 1), "atan2": (1, 1), "sinh": (24, 1),
    "cosh": (24, 1), "tanh": (2, 1), "asinh": (1.5, 1), "acosh": (1, 1), "atanh": (1.5, 1), "erf": (1, 1),
    "erfc": (7, 10000), "erf_inv": (6, 1), "logistic": (2, 27), "pow": (1, 1), "round": (0, 0),
    "floor": (0, 0), "ceil": (0, 0), "fmod": (0, 0),
}


def truth(x: np.ndarray) -> dict:
    y = np.roll(x, 37)
    with np.errstate(all="ignore"):
        return {
            "exp": np.exp(x), "expm1": np.expm1(x), "exp2": np.exp2(x), "log": np.log(x), "log1p": np.log1p(x),
            "log2": np.log2(x), "log10": np.log10(x), "sqrt": np.sqrt(x), "rsqrt": 1 / np.sqrt(x),
            "cbrt": np.cbrt(x), "sin": np.sin(x), "cos": np.cos(x), "tan": np.tan(x), "asin": np.arcsin(x),
            "acos": np.arccos(x), "atan": np.arctan(x), "atan2": np.arctan2(x, y), "sinh": np.sinh(x),
            "cosh": np.cosh(x), "tanh": np.tanh(x), "asinh": np.arcsinh(x), "acosh": np.arccosh(x),
            "atanh": np.arctanh(x), "erf": sp.erf(x), "erfc": sp.erfc(x), "erf_inv": sp.erfinv(x),
            "logistic": sp.expit(x), "pow": np.power(x, y), "round": np.round(x), "floor": np.floor(x),
            "ceil": np.ceil(x), "fmod": np.fmod(x, y),
        }


def ulp_error(got: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ulps of float32 at the truth, special value out of place) per element. NaN must be NaN
    and a result that overflows float32 must be the inf of its sign; those count 0 ulps."""
    g = got.astype(np.float64)
    with np.errstate(all="ignore"):
        t32 = t.astype(np.float32)
        special = np.isnan(t) | np.isinf(t32)
        wrong = np.where(np.isnan(t), ~np.isnan(g), np.where(np.isinf(t32), g != t32, np.isnan(g) | np.isinf(g)))
        ulps = np.abs(g - t) / np.spacing(np.abs(t32)).astype(np.float64)
    ulps[special] = 0
    return ulps, wrong


@pytest.fixture(scope="module")
def math_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("xla_math")
    c = capture(DATA / "xla_math.py", "xla_math", out)
    _, result = run_model(c.model_ll, out / "run")
    return c.manifest, read_outputs(result.stdout, c.manifest)


def test_every_function_within_its_bound_on_qemu(math_run):
    manifest, got = math_run
    x = xla_math.inputs().astype(np.float64)
    assert list(BOUNDS) == list(xla_math.FUNCTIONS) == list(truth(x))
    tiny = np.finfo(np.float32).tiny
    far = (np.abs(x) > 1e-30) | (x == 0)  # JAX's reference flushes subnormals: compare away from them
    far &= np.roll(far, 37)
    failures = []
    for k, (name, t) in enumerate(truth(x).items()):
        ulps, wrong = ulp_error(got[k], t)
        with np.errstate(over="ignore"):
            sub = np.abs(t.astype(np.float32)) < tiny
        regular, subnormal = BOUNDS[name]
        if wrong.any():
            i = int(np.flatnonzero(wrong)[0])
            failures.append(f"{name}({x[i]!r}) = {got[k][i]!r}, expected {t[i]!r}")
        for mask, bound, what in ((~sub, regular, "normal"), (sub, subnormal, "subnormal")):
            if mask.any() and ulps[mask].max() > bound:
                i = int(np.flatnonzero(mask)[np.argmax(ulps[mask])])
                failures.append(f"{name}({x[i]!r}): {ulps[i]:.3g} ulp on a {what} result (bound {bound})")
        # against JAX: both within their bounds of the truth, so within twice the bound of each other
        ref = manifest.outputs[k].array().astype(np.float64)
        with np.errstate(all="ignore"):
            near = far & (np.abs(t) > 1e-30) & np.isfinite(t)
            d = np.abs(got[k].astype(np.float64) - ref)[near] / np.spacing(np.abs(t[near].astype(np.float32)))
        if d.size and d.max() > 2 * max(regular, 1) + 4:  # + XLA's own 4 ulp (its exp and tanh budgets)
            failures.append(f"{name}: {d.max():.3g} ulp from JAX")
        same = np.isnan(ref[far]) == np.isnan(got[k][far])
        if not same.all():
            failures.append(f"{name}: NaN where JAX has none or the reverse")
    assert not failures, "\n".join(failures)


def test_bfloat16_conversion_is_bit_exact(math_run):
    manifest, got = math_run
    ref = manifest.outputs[-1].array()
    assert str(ref.dtype) == "bfloat16"
    np.testing.assert_array_equal(got[-1].view(np.uint16), ref.view(np.uint16))


ATAN = '''
import jax.numpy as jnp, numpy as np
def f(x):
    return jnp.arctan(x) * 2.0 + 1.0
f.example_inputs = {"x": np.linspace(-2, 2, 8, dtype=np.float32)}
f.weights = {}
'''


def test_capture_refuses_a_function_nothing_provides(tmp_path, monkeypatch):
    src = tmp_path / "m.py"
    src.write_text(ATAN)
    have = runtime_symbols.provided()
    assert "xla.atan.f32" in have  # libjit provides it: capture succeeds ...
    capture(src, "f", tmp_path / "ok")
    # ... and without it, capture names the op and its HLO instruction, before any link
    monkeypatch.setattr(runtime_symbols, "provided", lambda: have - {"xla.atan.f32"})
    with pytest.raises(UserError) as e:
        capture(src, "f", tmp_path / "out")
    assert re.fullmatch(r"capture: op 'atan2' \(HLO %[\w.-]+ in [\w.-]+\) needs xla\.atan\.f32, which neither "
                        r"libjit nor newlib's libc/libm provides", str(e.value)), str(e.value)
    assert not (tmp_path / "out" / "model.ll").exists()


def test_needs_maps_intrinsics_to_their_library_calls():
    text = "\n".join([
        "declare float @llvm.atan2.f32(float, float)", "declare <8 x float> @llvm.sin.v8f32(<8 x float>)",
        "declare double @llvm.pow.f64(double, double)", "declare float @llvm.sqrt.f32(float)",
        "declare double @llvm.sqrt.f64(double)", "declare float @llvm.fabs.f32(float)",
        "declare <8 x float> @xla.tanh.v8f32(<8 x float>)", "declare bfloat @xla.fptrunc.f32.to.bf16(float)",
        "declare float @cbrtf(float)", "declare float @llvm.powi.f32.i32(float, i32)"])
    got = {n.declared: n.symbol for n in runtime_symbols.needs(text)}
    assert got == {"llvm.atan2.f32": "atan2f", "llvm.sin.v8f32": "sinf", "llvm.pow.f64": "pow",
                   "llvm.sqrt.f64": "sqrt", "xla.tanh.v8f32": "xla.tanh.f32", "cbrtf": "cbrtf",
                   "llvm.powi.f32.i32": "__powisf2"}
    # and every one of them is there at link time
    assert set(got.values()) <= runtime_symbols.provided()


def test_s32_dot_lowers_to_the_s32_kernel():
    op = libcalls.Operand(Slice(0, 0, 48), "s32", (3, 4), (1, 0))
    w = libcalls.Operand(Slice(1, 0, 80), "s32", (4, 5), (1, 0))
    out = libcalls.Operand(Slice(2, 0, 60), "s32", (3, 5), (1, 0))
    dims = dict(lhs_contracting=(1,), rhs_contracting=(0,), lhs_batch=(), rhs_batch=())
    call = libcalls.lower_dot("dot.1", op, w, out, dims)
    assert call.function == "libjit_matmul_s32" and call.args[3:] == (1, 3, 4, 5, 0, 0)


S32_DOTS = '''
import jax.numpy as jnp, numpy as np
from jax import lax
def dots(a, b, c):
    stacked = jnp.stack([b, b + 1, b * 3])[:, :3]
    return (a @ b, jnp.dot(a.T, c), jnp.einsum("bij,bkj->bik", a.reshape(3, 2, 4), stacked),
            lax.dot(a.astype(jnp.uint8), b.astype(jnp.uint8), preferred_element_type=jnp.uint32))
dots.example_inputs = {"a": (np.arange(24, dtype=np.int32).reshape(6, 4) - 5) * 1000003,  # sums wrap
                       "b": np.arange(16, dtype=np.int32).reshape(4, 4) * 7919 - 40,
                       "c": np.arange(30, dtype=np.int32).reshape(6, 5) * -3}
dots.weights = {}
'''


def test_s32_dots_run_on_qemu_and_match_jax(tmp_path):
    src = tmp_path / "dots.py"
    src.write_text(S32_DOTS)
    c = capture(src, "dots", tmp_path / "out")
    ir = c.model_ll.read_text()
    # plain, transposed lhs, batched with transposed rhs, and u8 widened to u32
    assert len(re.findall(r"call void @libjit_matmul_s32\(", ir)) == 4
    row, result = run_model(c.model_ll, tmp_path / "run")
    assert row.status == "pass"
    for g, t in zip(read_outputs(result.stdout, c.manifest), c.manifest.outputs):
        np.testing.assert_array_equal(g, t.array())


def test_llvm_exp_is_renamed_to_libjits_exp_when_a_model_is_loaded():
    from specializer.capture import intrinsics

    text = ("define float @f(float %x) {\n  %y = call float @llvm.exp.f32(float %x)\n"
            "  %v = call <2 x float> @llvm.exp.v2f32(<2 x float> zeroinitializer)\n  ret float %y\n}\n"
            "declare float @llvm.exp.f32(float) #1\ndeclare <2 x float> @llvm.exp.v2f32(<2 x float>) #1\n")
    got = intrinsics.libjit_math(text)
    assert "@llvm.exp" not in got
    assert "  %y = call float @xla.exp.f32(float %x)" in got
    assert got.count("declare float @xla.exp.f32(float)") == 1  # the renamed one, no second
    assert "define linkonce_odr <2 x float> @xla.exp.v2f32(<2 x float> %x) {" in got  # two scalar calls
    # a module that declares xla.exp.f32 already keeps one declaration
    both = text.replace("declare <2 x float>", "declare float @xla.exp.f32(float)\ndeclare <2 x float>")
    assert intrinsics.libjit_math(both).count("declare float @xla.exp.f32(float)") == 1
    assert intrinsics.libjit_math("define void @g() {\n  ret void\n}\n") == "define void @g() {\n  ret void\n}\n"


def test_xlas_math_declarations_become_nounwind():
    from specializer.capture import intrinsics

    # libjit's C functions do not unwind; declared so, their callers need no unwind tables (which
    # pulled ARM's unwinder into the separate variant's flash)
    got = intrinsics.libjit_math("declare float @xla.tanh.f32(float)\ndeclare float @xla.erf.f32(float) #0\n")
    assert got == "declare float @xla.tanh.f32(float) nounwind\ndeclare float @xla.erf.f32(float) #0\n"


def test_a_wrapper_the_module_has_already_is_not_defined_again():
    import llvmlite.binding as llvm

    from specializer.capture import intrinsics

    # XLA's own vector exp beside LLVM's: one wrapper, one scalar declaration, and the result parses
    text = ("define <4 x float> @f(<4 x float> %x) {\n"
            "  %a = call <4 x float> @xla.exp.v4f32(<4 x float> %x)\n"
            "  %b = call <4 x float> @llvm.exp.v4f32(<4 x float> %a)\n  ret <4 x float> %b\n}\n"
            "declare <4 x float> @xla.exp.v4f32(<4 x float>)\ndeclare <4 x float> @llvm.exp.v4f32(<4 x float>) #1\n"
            "attributes #1 = { nounwind }\n")
    for got in (intrinsics.libjit_math(text), intrinsics.libjit_math(intrinsics.append_to(text))):
        assert got.count("define linkonce_odr <4 x float> @xla.exp.v4f32(") == 1
        assert "declare <4 x float> @xla.exp.v4f32" not in got
        assert got.count("declare float @xla.exp.f32(float)") == 1
        llvm.parse_assembly(got).verify()
