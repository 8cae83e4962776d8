"""requant_proof.fast_form: where it gives constants, the fast form equals arm_nn_requantize
(computed by specializer.quant.fixedpoint, the JAX model of CMSIS-NN's arithmetic) for every
accumulator value in the interval; where it cannot hold, it gives none."""

import numpy as np

from specializer.optimize import requant_proof as rp
from specializer.quant import fixedpoint


def test_fast_form_equals_cmsis_nn_over_the_whole_interval():
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(10):
        m = int(rng.integers(1 << 30, (1 << 31) - 1))
        shift, bias, off = -int(rng.integers(1, 16)), int(rng.integers(-40000, 40000)), int(rng.integers(-128, 128))
        lo, hi = -int(rng.integers(1, 40000)), int(rng.integers(1, 40000))
        form = rp.fast_form(m, shift, bias, off, lo, hi)
        assert form is not None
        acc = np.minimum(lo + np.arange(1 << 17), hi)  # every value of the interval; one shape for JAX
        want = np.asarray(fixedpoint.requantize((acc + bias).astype(np.int32), m, shift)) + off
        assert np.array_equal(rp.evaluate(acc, form), want), (m, shift, bias, off)
        checked += hi - lo + 1
    assert checked > 200_000


def test_ties_round_away_from_zero_as_cmsis_nn():
    # m = 2^30 halves: acc * 2^30 / 2^31 / 2^rs lands on every .5 of both signs
    form = rp.fast_form(1 << 30, -1, 0, 0, -64, 64)
    acc = np.arange(-64, 65)
    assert np.array_equal(rp.evaluate(acc, form), np.asarray(fixedpoint.requantize(acc.astype(np.int32), 1 << 30, -1)))
    assert rp.evaluate(np.array([-2, 2]), form).tolist() == [-1, 1]  # -0.5 -> -1, 0.5 -> 1


def test_no_fast_form_where_it_cannot_hold():
    assert rp.fast_form(1 << 30, 0, 0, 0, -10, 10) is None  # no right shift to round at
    assert rp.fast_form(1 << 30, 2, 0, 0, -10, 10) is None  # a left shift first
    assert rp.fast_form(1 << 30, -4, 0, 0, -(1 << 30), 1 << 30) is None  # 2 * acc is not an int32


def test_constant_output_is_cmsis_nns_value_for_every_accumulator():
    rng = np.random.default_rng(4)
    found = {True: 0, False: 0}
    for _ in range(24):
        m, shift = int(rng.integers(1 << 30, (1 << 31) - 1)), -int(rng.integers(8, 24))
        bias, off = int(rng.integers(-4000, 4000)), int(rng.integers(-128, 128))
        act = (off, 127) if rng.integers(2) else (-128, 127)  # a fused ReLU's clamp, or none
        lo, hi = -int(rng.integers(1, 1 << 16)), int(rng.integers(1, 1 << 16))
        got = rp.constant_output(m, shift, bias, off, act, lo, hi)
        acc = np.minimum(lo + np.arange(1 << 17), hi)  # every value of the interval; one shape for JAX
        want = np.clip(np.asarray(fixedpoint.requantize((acc + bias).astype(np.int32), m, shift)) + off, *act)
        if got is None:
            assert want.min() != want.max(), (m, shift, bias, off, act)
        else:
            assert np.all(want == got), (m, shift, bias, off, act)
        found[got is None] += 1
    assert found[True] >= 5 and found[False] >= 5, found  # both kinds were checked
    assert rp.constant_output(1 << 30, 1, 0, 0, (-128, 127), 0, 0) is None  # a left shift: not claimed


def test_without_the_sign_step_the_same_once_clamped_at_or_above_the_output_offset():
    rng = np.random.default_rng(6)
    differs = 0
    for _ in range(12):
        m = int(rng.integers(1 << 30, (1 << 31) - 1))
        shift, bias, off = -int(rng.integers(1, 12)), int(rng.integers(-4000, 4000)), int(rng.integers(-128, 100))
        lo, hi = -int(rng.integers(1, 1 << 16)), int(rng.integers(1, 1 << 16))
        form = rp.fast_form(m, shift, bias, off, lo, hi)
        acc = np.minimum(lo + np.arange(1 << 17), hi)
        want = np.asarray(fixedpoint.requantize((acc + bias).astype(np.int32), m, shift)) + off
        got = rp.evaluate(acc, form, sign_step=False)
        differs += int(np.count_nonzero(got != want))  # before the clamp it is not CMSIS-NN's
        for act in ((off, 127), (min(off + 20, 127), 127)):  # a fused ReLU's clamp, or a higher one
            assert not rp.sign_step_needed(off, act)
            assert np.array_equal(np.clip(got, *act), np.clip(want, *act)), (m, shift, bias, off, act)
    assert differs > 0  # the step matters where the clamp does not cover it
    assert rp.sign_step_needed(0, (-128, 127))
