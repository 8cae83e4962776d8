"""zeroweights.fold: a zero product is dropped only from the sum of its own function."""

from specializer.optimize import zeroweights

TWO_FUNCTIONS = """
define float @a(float %x, float %acc) {
  %p = fmul float %x, 0.000000e+00
  %s = fadd float %acc, %p
  ret float %s
}

define float @b(float %x, float %y, float %acc) {
  %p = fmul float %x, %y
  %s = fadd float %acc, %p
  ret float %s
}
"""


def test_zero_product_is_dropped_in_its_own_function_only():
    # found by scripts/fuzz.py: in a module of many kernels, b's %p (a real product) shared its
    # name with a's zero product and b's sum lost it (wrong all-args results)
    text, dropped = zeroweights.fold(TWO_FUNCTIONS)
    assert dropped == 1
    a, b = text.split("define float @b")
    assert "%s = fadd float %acc, -0.000000e+00" in a
    assert "%s = fadd float %acc, %p" in b


def test_a_loop_sum_before_its_zero_product_is_dropped():
    loop = """
define float @c(float %x) {
entry:
  br label %loop
loop:
  %acc = phi float [ 0.0, %entry ], [ %s, %loop ]
  %s = fadd float %acc, %p
  %p = fmul float %x, 0.000000e+00
  br label %loop
}
"""
    text, dropped = zeroweights.fold(loop)
    assert dropped == 1 and "%s = fadd float %acc, -0.000000e+00" in text
