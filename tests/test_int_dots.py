"""Integer dots JAX produces, run in every variant on QEMU against JAX: s8 x s8 -> s32 in the
plain, transposed-operand and batched layouts, u8 x u8 and s8 x u8 -> s32, and the narrow
results jnp.dot gives (s8, u8) and an s16 one. The dots of int8 inputs as stored run on
CMSIS-NN's s8 kernel; the others on widened operands (libjit_matmul_s32) or XLA's own IR."""

import numpy as np

MODEL = '''
import jax.numpy as jnp, numpy as np
from jax import lax

def f(a, b, c, d):
    i32 = jnp.int32
    return (lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=i32),
            lax.dot_general(a, a, (((1,), (1,)), ((), ())), preferred_element_type=i32),
            lax.dot_general(a, a, (((0,), (0,)), ((), ())), preferred_element_type=i32),
            lax.dot_general(c, d, (((1,), (0,)), ((), ())), preferred_element_type=i32),
            lax.dot_general(a, d, (((1,), (0,)), ((), ())), preferred_element_type=i32),
            lax.dot_general(jnp.reshape(a, (2, 2, 8)), jnp.reshape(a, (2, 2, 8)),
                            (((2,), (2,)), ((0,), (0,))), preferred_element_type=i32),
            jnp.dot(a, b), jnp.dot(c, d),
            lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int16))

rng = np.random.default_rng(0)
f.example_inputs = {"a": rng.integers(-128, 128, (4, 8)).astype(np.int8),
                    "b": rng.integers(-128, 128, (8, 6)).astype(np.int8),
                    "c": rng.integers(0, 256, (4, 8)).astype(np.uint8),
                    "d": rng.integers(0, 256, (8, 6)).astype(np.uint8)}
'''


def test_integer_dots_match_jax_in_every_variant(tmp_path):
    from specializer import inputs
    from specializer.optimize import variants
    from specializer.capture.capture import capture
    from specializer.driver.compare import compare

    src = tmp_path / "m.py"
    src.write_text(MODEL)
    c = capture(src, "f", tmp_path / "cap")
    dtypes = [t.dtype for t in c.manifest.outputs]
    assert dtypes == ["int32"] * 6 + ["int8", "uint8", "int16"], dtypes
    assert any(np.abs(t.array()).max() > 127 for t in c.manifest.outputs[:6])  # sums that need 32 bits
    ir = c.model_ll.read_text()
    assert "call void @libjit_matmul_s8_s32(" in ir and "call void @libjit_matmul_s32(" in ir
    # one unroll threshold: the result does not depend on it, and the suite's time does
    comp = compare(inputs.load(c.model_ll), tmp_path / "variants", variants.Options.of(unroll_candidates=()))
    assert {r.variant: r.status for r in comp.rows} == {v: "pass" for v in
                                                       ("separate", "lto", "llvm-funcspec", "dims", "all-args")}
