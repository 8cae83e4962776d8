"""int8 blocks (specializer.quant) against straightforward integer references written here:
Python ints / int64 NumPy and plain loops, following CMSIS-NN's documented arithmetic."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from specializer.quant import blocks, fixedpoint as fp
from specializer.quant.params import (AddParams, ConvParams, DepthwiseParams, FullyConnectedParams,
                                      PoolParams, SoftmaxParams, lookup, registered)

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1


# ---------------------------------------------------------------- reference arithmetic (Python ints)

def wrap32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def ref_rounding_div_pot(x: int, e: int) -> int:
    """x / 2**e, exact halves away from zero."""
    if e == 0:
        return x
    q, r = divmod(abs(x), 1 << e)
    if 2 * r >= 1 << e:
        q += 1
    return q if x >= 0 else -q


def ref_requantize(v: int, m: int, s: int) -> int:
    v = wrap32(v * (1 << max(s, 0)))
    high = wrap32((v * m + (1 << 30)) >> 31)
    return ref_rounding_div_pot(high, max(-s, 0))


def ref_mul_sat(a: int, b: int) -> int:
    if a == b == I32_MIN:
        return I32_MAX
    v = a * b + ((1 << 30) if (a < 0) == (b < 0) else 1 - (1 << 30))
    q = abs(v) >> 31
    return wrap32(q if v >= 0 else -q)


def ref_finish(acc: int, m: int, s: int, out_off: int, act) -> int:
    return min(max(ref_requantize(acc, m, s) + out_off, act[0]), act[1])


def qparams(rng, n, depth=64):
    """Per-channel multipliers in [2**30, 2**31) and shifts that map sums of `depth` int8
    products (about 2**14 * sqrt(depth)) onto roughly the int8 range, give or take a factor 2."""
    mult = tuple(int(v) for v in rng.integers(1 << 30, 1 << 31, n))
    base = -round(np.log2(2 ** 14 * np.sqrt(depth) / 64))
    shift = tuple(int(v) for v in rng.integers(base - 1, base + 2, n))
    return mult, shift


# ---------------------------------------------------------------- fixed point

EDGE = [0, 1, -1, 2, -2, 3, -3, I32_MAX, I32_MIN, I32_MIN + 1, 1 << 30, -(1 << 30), (1 << 30) - 1,
        65535, 65536, -65536, -65537, 12345678, -12345678]


def _pairs(rng, n=3000):
    a = EDGE * len(EDGE) + [int(v) for v in rng.integers(I32_MIN, I32_MAX, n, endpoint=True)]
    b = sum([[e] * len(EDGE) for e in EDGE], []) + [int(v) for v in rng.integers(I32_MIN, I32_MAX, n, endpoint=True)]
    return a, b


def test_doubling_high_mult_matches_int64():
    a, b = _pairs(np.random.default_rng(0))
    ja, jb = jnp.asarray(np.array(a, np.int32)), jnp.asarray(np.array(b, np.int32))
    got = np.asarray(fp.doubling_high_mult_no_sat(ja, jb)).tolist()
    assert got == [wrap32((x * y + (1 << 30)) >> 31) for x, y in zip(a, b)]
    got = np.asarray(fp.doubling_high_mult(ja, jb)).tolist()
    assert got == [ref_mul_sat(x, y) for x, y in zip(a, b)]


@pytest.mark.parametrize("e", [0, 1, 2, 5, 17, 30, 31])
def test_divide_by_power_of_two_rounds_halves_away_from_zero(e):
    rng = np.random.default_rng(e)
    xs = EDGE + [k * (1 << max(e - 1, 0)) for k in range(-9, 10) if I32_MIN <= k * (1 << max(e - 1, 0)) <= I32_MAX]  # ties
    xs += [int(v) for v in rng.integers(I32_MIN, I32_MAX, 2000)]
    got = np.asarray(fp.divide_by_power_of_two(jnp.asarray(np.array(xs, np.int32)), e)).tolist()
    assert got == [ref_rounding_div_pot(x, e) for x in xs]


def test_requantize_edge_cases():
    rng = np.random.default_rng(1)
    vals = EDGE + [int(v) for v in rng.integers(-(1 << 20), 1 << 20, 400)] + [-3, -2, -1, 1, 2, 3]
    mults = [0, 1, (1 << 30), (1 << 30) + 1, I32_MAX, 1518500250, 1073741824 + 12345]
    for m in mults:
        for s in (-31, -20, -8, -1, 0, 1, 4, 30):
            got = np.asarray(fp.requantize(jnp.asarray(np.array(vals, np.int32)), m, s)).tolist()
            assert got == [ref_requantize(v, m, s) for v in vals], (m, s)
    # ties: the doubling high multiply rounds halves up (v * 2**30 / 2**31 = v / 2), the
    # final right shift rounds them away from zero
    ties = np.arange(-7, 8, dtype=np.int32)
    assert np.asarray(fp.requantize(jnp.asarray(ties), 1 << 30, 0)).tolist()[:4] == [-3, -3, -2, -2]
    assert np.asarray(fp.requantize(jnp.asarray(ties), 1 << 30, -1)).tolist()[:4] == [-2, -2, -1, -1]
    assert np.asarray(fp.requantize(jnp.asarray(ties * 2), 1 << 30, -1)).tolist()[:4] == [-4, -3, -3, -2]


def test_requantize_per_channel_broadcasts_on_last_axis():
    rng = np.random.default_rng(2)
    x = rng.integers(-(1 << 16), 1 << 16, (3, 5)).astype(np.int32)
    m, s = qparams(rng, 5)
    got = np.asarray(fp.requantize(jnp.asarray(x), np.array(m), np.array(s)))
    ref = [[ref_requantize(int(x[i, j]), m[j], s[j]) for j in range(5)] for i in range(3)]
    assert got.tolist() == ref


def test_quantize_multiplier():
    for real in (0.5, 0.25, 0.3, 1e-3, 0.999999999, 1.0, 3.7, 1e-9, 2 ** -31, 1e-12, 12345.0):
        m, s = fp.quantize_multiplier(real)
        if real < 2 ** -32:
            assert (m, s) == (0, 0)
            continue
        assert (1 << 30) <= m < (1 << 31)
        assert abs(m * 2.0 ** (s - 31) - real) <= real * 2 ** -30
    assert fp.quantize_multiplier(0.0) == (0, 0)
    assert fp.quantize_multiplier(0.5) == (1 << 30, 0)
    # q rounds up to 2**31: renormalized
    assert fp.quantize_multiplier(1 - 2 ** -40) == (1 << 30, 1)
    with pytest.raises(ValueError):
        fp.quantize_multiplier(-1.0)


# ---------------------------------------------------------------- blocks

def ref_conv(x, w, bias, p: ConvParams, depthwise=False, ch_mult=1):
    n, h, wd, cin = x.shape
    _, oh, ow, cout = p.output_dims
    (t, _), (l, _) = p.padding
    kh, kw = (w.shape[1], w.shape[2])
    out = np.zeros((n, oh, ow, cout), np.int64)
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for co in range(cout):
                    acc = int(bias[co]) if bias is not None else 0
                    for i in range(kh):
                        for j in range(kw):
                            y = oy * p.stride[0] - t + i * p.dilation[0]
                            xx = ox * p.stride[1] - l + j * p.dilation[1]
                            if not (0 <= y < h and 0 <= xx < wd):
                                continue  # padding: contributes the zero point, i.e. 0
                            if depthwise:
                                acc += (int(x[b, y, xx, co // ch_mult]) + p.input_offset) * int(w[0, i, j, co])
                            else:
                                for ci in range(cin):
                                    acc += (int(x[b, y, xx, ci]) + p.input_offset) * int(w[co, i, j, ci])
                    k = co if len(p.multipliers) > 1 else 0
                    out[b, oy, ox, co] = ref_finish(wrap32(acc), p.multipliers[k], p.shifts[k],
                                                    p.output_offset, p.activation)
    return out


def _ints(rng, shape, lo=-128, hi=127, dtype=np.int8):
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


CONV_CASES = [  # (n, h, w, cin, cout, kh, kw, stride, padding[, dilation])
    (1, 7, 6, 3, 5, 3, 3, (2, 2), ((1, 1), (1, 1))),
    (2, 5, 9, 5, 7, 3, 2, (1, 2), ((2, 0), (0, 1))),
    (1, 9, 4, 1, 6, 4, 3, (2, 1), ((1, 2), (2, 1))),
    (1, 4, 4, 7, 3, 1, 1, (1, 1), ((0, 0), (0, 0))),
    (1, 5, 5, 6, 3, 1, 1, (2, 2), ((0, 0), (0, 0))),
    (1, 9, 8, 3, 4, 3, 2, (1, 2), ((2, 1), (1, 2)), (2, 3)),
]


def _dilated(k: int, d: int) -> int:
    return (k - 1) * d + 1


@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("per_channel", [True, False])
def test_conv2d(case, per_channel):
    n, h, w, cin, cout, kh, kw, stride, pad = case[:9]
    dil = case[9] if len(case) > 9 else (1, 1)
    rng = np.random.default_rng(hash((case, per_channel)) % 2 ** 32)
    oh = blocks.conv_output_size(h, _dilated(kh, dil[0]), stride[0], pad[0])
    ow = blocks.conv_output_size(w, _dilated(kw, dil[1]), stride[1], pad[1])
    m, s = qparams(rng, cout if per_channel else 1, kh * kw * cin)
    p = ConvParams(input_dims=(n, h, w, cin), filter_dims=(cout, kh, kw, cin), output_dims=(n, oh, ow, cout),
                   stride=stride, padding=pad, input_offset=int(rng.integers(-127, 129)),
                   output_offset=int(rng.integers(-40, 41)), activation=(-100, 120), multipliers=m, shifts=s,
                   dilation=dil)
    x, wt = _ints(rng, (n, h, w, cin)), _ints(rng, (cout, kh, kw, cin), -127)
    bias = _ints(rng, cout, -5000, 5000, np.int32)
    got = np.asarray(jax.jit(lambda a, b, c: blocks.conv2d(a, b, c, p))(x, wt, bias))
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, ref_conv(x, wt, bias, p))
    assert len(np.unique(got)) >= 8  # the case exercises the range, not just the clamp
    with blocks.values_only():  # the reference run's form: one dot, the same values
        one = np.asarray(jax.jit(lambda a, b, c: blocks.conv2d(a, b, c, p))(x, wt, bias))
        assert blocks.dot_used()
    np.testing.assert_array_equal(one, got)


@pytest.mark.parametrize("case", [  # (h, w, cin, mult, kh, kw, stride, padding[, dilation])
    (7, 6, 5, 1, 3, 3, (2, 2), ((1, 1), (1, 1))),
    (6, 5, 3, 2, 3, 3, (1, 1), ((1, 1), (1, 1))),
    (8, 7, 6, 1, 3, 2, (2, 1), ((0, 2), (1, 0))),
    (9, 8, 4, 2, 3, 3, (1, 1), ((2, 2), (1, 1)), (2, 1)),
])
def test_depthwise_conv2d(case):
    h, w, cin, mult, kh, kw, stride, pad = case[:8]
    dil = case[8] if len(case) > 8 else (1, 1)
    rng = np.random.default_rng(sum(map(hash, map(str, case))) % 2 ** 32)
    cout = cin * mult
    oh = blocks.conv_output_size(h, _dilated(kh, dil[0]), stride[0], pad[0])
    ow = blocks.conv_output_size(w, _dilated(kw, dil[1]), stride[1], pad[1])
    m, s = qparams(rng, cout, kh * kw)
    p = DepthwiseParams(input_dims=(1, h, w, cin), filter_dims=(1, kh, kw, cout), output_dims=(1, oh, ow, cout),
                        ch_mult=mult, stride=stride, padding=pad, input_offset=int(rng.integers(-127, 129)),
                        output_offset=int(rng.integers(-40, 41)), activation=(-128, 127),
                        multipliers=m, shifts=s, dilation=dil)
    x, wt = _ints(rng, (1, h, w, cin)), _ints(rng, (1, kh, kw, cout), -127)
    bias = _ints(rng, cout, -3000, 3000, np.int32)
    got = np.asarray(jax.jit(lambda a, b, c: blocks.depthwise_conv2d(a, b, c, p))(x, wt, bias))
    np.testing.assert_array_equal(got, ref_conv(x, wt, bias, p, depthwise=True, ch_mult=mult))
    assert len(np.unique(got)) > 10


@pytest.mark.parametrize("batch,k,n,per_channel", [(1, 37, 11, False), (3, 64, 10, True), (2, 5, 1, False)])
def test_fully_connected(batch, k, n, per_channel):
    rng = np.random.default_rng(k * n)
    m, s = qparams(rng, n if per_channel else 1, k)
    p = FullyConnectedParams(batch=batch, in_features=k, out_features=n, input_offset=int(rng.integers(-127, 129)),
                             output_offset=-7, activation=(-7, 127), multipliers=m, shifts=s)
    x, wt, bias = _ints(rng, (batch, k)), _ints(rng, (n, k), -127), _ints(rng, n, -9000, 9000, np.int32)
    got = np.asarray(jax.jit(lambda a, b, c: blocks.fully_connected(a, b, c, p))(x, wt, bias))
    with blocks.values_only():
        one = np.asarray(jax.jit(lambda a, b, c: blocks.fully_connected(a, b, c, p))(x, wt, bias))
    np.testing.assert_array_equal(one, got)
    ref = np.zeros((batch, n), np.int64)
    for b in range(batch):
        for o in range(n):
            acc = int(bias[o]) + sum((int(x[b, i]) + p.input_offset) * int(wt[o, i]) for i in range(k))
            j = o if per_channel else 0
            ref[b, o] = ref_finish(acc, m[j], p.shifts[j], p.output_offset, p.activation)
    np.testing.assert_array_equal(got, ref)


def test_only_values_only_gives_a_dot():
    """Capture takes XLA's IR of the chain form (it has no kernel for an int32 dot); the one-dot
    form is for runs whose values are all that is used."""
    p = FullyConnectedParams(batch=2, in_features=9, out_features=4, input_offset=3, output_offset=0,
                             activation=(-128, 127), multipliers=(1 << 30,), shifts=(-2,))
    args = (jnp.zeros((2, 9), jnp.int8), jnp.zeros((4, 9), jnp.int8), jnp.zeros(4, jnp.int32))

    def hlo():
        return jax.jit(lambda a, b, c: blocks.fully_connected(a, b, c, p)).lower(*args).as_text()

    assert "dot_general" not in hlo()
    with blocks.values_only():
        assert "dot_general" in hlo() and blocks.dot_used()
    assert "dot_general" not in hlo()


POOL_CASES = [  # (h, w, c, kh, kw, stride, padding)
    (7, 6, 5, 3, 3, (2, 2), ((1, 1), (1, 1))),
    (5, 5, 3, 2, 2, (2, 2), ((0, 1), (0, 1))),
    (6, 9, 7, 3, 2, (1, 2), ((2, 1), (0, 1))),
    (25, 5, 6, 25, 5, (1, 1), ((0, 0), (0, 0))),  # global average pool
]


@pytest.mark.parametrize("case", POOL_CASES)
@pytest.mark.parametrize("kind", ["avg", "max"])
def test_pools(case, kind):
    h, w, c, kh, kw, stride, pad = case
    rng = np.random.default_rng(h * w * c)
    oh = blocks.conv_output_size(h, kh, stride[0], pad[0])
    ow = blocks.conv_output_size(w, kw, stride[1], pad[1])
    act = (-90, 100)
    p = PoolParams(kind=kind, input_dims=(1, h, w, c), filter=(kh, kw), output_dims=(1, oh, ow, c),
                   stride=stride, padding=pad, activation=act)
    x = _ints(rng, (1, h, w, c))
    fn = blocks.avg_pool if kind == "avg" else blocks.max_pool
    got = np.asarray(jax.jit(lambda a: fn(a, p))(x))
    ref = np.zeros((1, oh, ow, c), np.int64)
    for oy in range(oh):
        for ox in range(ow):
            for ch in range(c):
                vals = [int(x[0, y, xx, ch]) for y in range(oy * stride[0] - pad[0][0], oy * stride[0] - pad[0][0] + kh)
                        for xx in range(ox * stride[1] - pad[1][0], ox * stride[1] - pad[1][0] + kw)
                        if 0 <= y < h and 0 <= xx < w]
                if kind == "max":
                    v = max(vals)
                else:
                    s, cnt = sum(vals), len(vals)
                    v = int((s + cnt // 2 if s > 0 else s - cnt // 2) / cnt)  # C: truncating division
                ref[0, oy, ox, ch] = min(max(v, act[0]), act[1])
    np.testing.assert_array_equal(got, ref)


def test_avg_pool_rounds_halves_away_from_zero():
    p = PoolParams(kind="avg", input_dims=(1, 1, 2, 4), filter=(1, 2), output_dims=(1, 1, 1, 4),
                   stride=(1, 1), padding=((0, 0), (0, 0)), activation=(-128, 127))
    x = np.array([[[[1, -1, 2, -3], [2, -2, 2, -2]]]], np.int8)  # sums 3, -3, 4, -5
    assert np.asarray(blocks.avg_pool(jnp.asarray(x), p)).ravel().tolist() == [2, -2, 2, -3]


@pytest.mark.parametrize("shape", [(1, 7, 5, 3), (13,), (2, 33)])
def test_add(shape):
    rng = np.random.default_rng(len(shape))
    s1, s2, so = 0.05, 0.11, 0.13
    twice = 2 * max(s1, s2)
    m1, sh1 = fp.quantize_multiplier(s1 / twice)
    m2, sh2 = fp.quantize_multiplier(s2 / twice)
    mo, sho = fp.quantize_multiplier(twice / ((1 << 20) * so))
    p = AddParams(shape=shape, input_1_offset=9, input_1_mult=m1, input_1_shift=sh1, input_2_offset=-30,
                  input_2_mult=m2, input_2_shift=sh2, left_shift=20, out_offset=-4, out_mult=mo,
                  out_shift=sho, activation=(-4, 127))
    a, b = _ints(rng, shape), _ints(rng, shape)
    got = np.asarray(jax.jit(lambda u, v: blocks.add(u, v, p))(a, b))
    ref = [min(max(ref_requantize(ref_requantize((int(u) + 9) << 20, m1, sh1)
                                  + ref_requantize((int(v) - 30) << 20, m2, sh2), mo, sho) - 4, -4), 127)
           for u, v in zip(a.ravel(), b.ravel())]
    assert got.ravel().tolist() == ref


# ---------------------------------------------------------------- softmax: a NumPy port of the integer algorithm

def ref_exp_on_negative(val: int) -> int:
    def mul(a, b):
        return ref_mul_sat(wrap32(a), wrap32(b))
    mod_mq = (val & ((1 << 24) - 1)) - (1 << 24)
    remainder = mod_mq - val
    x = wrap32((mod_mq << 5) + (1 << 28))
    x2 = mul(x, x)
    inner = wrap32(ref_rounding_div_pot(mul(x2, x2), 2) + mul(x2, x))
    poly = ref_rounding_div_pot(wrap32(mul(inner, 715827883) + x2), 1)
    result = wrap32(1895147668 + mul(1895147668, wrap32(x + poly)))
    for i, c in enumerate((1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
        if remainder & (1 << (24 + i)):
            result = mul(result, c)
    return I32_MAX if val == 0 else result


def ref_mul_pow2(v: int, e: int) -> int:
    thresh = (1 << (31 - e)) - 1
    return I32_MAX if v > thresh else I32_MIN if v < -thresh else wrap32(v << e)


def ref_one_over(val: int) -> int:
    s = val + I32_MAX
    half = int((s + (1 if s >= 0 else -1)) / 2)
    x = wrap32(1515870810 + ref_mul_sat(half, -1010580540))
    for _ in range(3):
        x = wrap32(x + ref_mul_pow2(ref_mul_sat(x, wrap32((1 << 29) - ref_mul_sat(half, x))), 2))
    return ref_mul_pow2(x, 1)


def ref_softmax_row(row, mult, shift, diff_min):
    mx = max(int(v) for v in row)
    exps = [ref_exp_on_negative(ref_mul_sat(wrap32((int(v) - mx) * (1 << shift)), mult)) for v in row]
    valid = [int(v) - mx >= diff_min for v in row]
    total = sum(ref_rounding_div_pot(e, 12) for e, ok in zip(exps, valid) if ok)
    headroom = 32 - total.bit_length()
    scale = ref_one_over(wrap32((total << headroom) - (1 << 31)))
    bits = 12 - headroom + 23
    return [min(max(ref_rounding_div_pot(ref_mul_sat(scale, e), bits) - 128, -128), 127) if ok else -128
            for e, ok in zip(exps, valid)]


def softmax_params(scale: float, rows: int, size: int) -> SoftmaxParams:
    from specializer.quant.ptq import softmax_params as sp
    return sp(scale, rows, size)


@pytest.mark.parametrize("scale,rows,size", [(0.1, 3, 10), (0.02, 2, 37), (0.5, 4, 5), (0.0625, 1, 300)])
def test_softmax(scale, rows, size):
    rng = np.random.default_rng(size)
    p = softmax_params(scale, rows, size)
    x = _ints(rng, (rows, size))
    x[0, :3] = [127, 127, -128]  # ties at the max and a value below diff_min for large scales
    got = np.asarray(jax.jit(lambda a: blocks.softmax(a, p))(x))
    ref = [ref_softmax_row(r, p.mult, p.shift, p.diff_min) for r in x]
    assert got.tolist() == ref
    # and it is a softmax: close to the float one at the output scale 1/256
    f = jax.nn.softmax(x.astype(np.float32) * scale, axis=-1)
    assert np.max(np.abs((got.astype(np.float32) + 128) / 256 - f)) <= 1.5 / 256


def test_blocks_are_marked_in_hlo_and_params_registered():
    p = FullyConnectedParams(batch=1, in_features=4, out_features=3, input_offset=1, output_offset=0,
                             activation=(-128, 127), multipliers=(1 << 30,), shifts=(-3,))
    hlo = jax.jit(lambda x, w: blocks.fully_connected(x, w, None, p)).lower(
        np.zeros((1, 4), np.int8), np.zeros((3, 4), np.int8)).compile().as_text()  # XLA's optimized HLO
    assert p.scope.startswith("cmsis_nn.fully_connected_s8.")
    assert f'op_name="jit(<lambda>)/{p.scope}/' in hlo
    assert lookup(f"jit(<lambda>)/{p.scope}") is p
    # the name is a function of the parameters only; the parameters are JSON-ready
    d = json.loads(json.dumps(registered()[p.scope]))
    assert d["op"] == "fully_connected_s8" and d["shifts"] == [-3]
    q = FullyConnectedParams(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k != "op"})
    assert q.scope == p.scope


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="activation range"):
        PoolParams(kind="max", input_dims=(1, 2, 2, 1), filter=(2, 2), output_dims=(1, 1, 1, 1), stride=(1, 1),
                   padding=((0, 0), (0, 0)), activation=(-129, 127))
    p = FullyConnectedParams(batch=1, in_features=4, out_features=3, input_offset=1, output_offset=0,
                             activation=(-128, 127), multipliers=(1 << 30,), shifts=(-3,))
    with pytest.raises(ValueError, match="filter must be int8"):
        blocks.fully_connected(jnp.zeros((1, 4), jnp.int8), jnp.zeros((3, 4), jnp.int32), None, p)


def test_softmax_rows_leave_the_rounding_shift_below_32():
    # 512 equal values: each exp(0) / 2**12 is 2**19, the sum 2**28 leaves a shift of 32
    ok = SoftmaxParams(num_rows=1, row_size=511, mult=1 << 30, shift=20, diff_min=-100)
    assert ok.row_size == 511
    with pytest.raises(ValueError, match="row size 512 outside"):
        SoftmaxParams(num_rows=1, row_size=512, mult=1 << 30, shift=20, diff_min=-100)
