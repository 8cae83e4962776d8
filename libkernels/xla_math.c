/* The math functions XLA's CPU IR calls by name but does not define (`xla.F.f32`).
 *
 * XLA's ir-no-opt IR declares them; XLA's own compiler would later insert its polynomial
 * definitions. jax 0.10.2's XLA knows these names (its intrinsic library): exp, expm1, log1p,
 * rsqrt, tanh, erf, atan, sin, cos, fptrunc (f32 -> bf16, defined as IR by
 * specializer/capture/intrinsics.py, as are the vector forms `xla.F.vNf32`) and ldexp (f64 only, used
 * inside XLA's own f64 exp: never called from f32 code). Each is defined here within
 * the ulp error XLA's own gives (bounds measured on QEMU by tests/test_xla_math.py and listed in
 * docs/kernels.md). Where newlib's libm is accurate (its fdlibm float code, about
 * 1 ulp) it is used; rsqrt, exp and tanh are ours. Per-call cycle estimates are in docs/kernels.md.
 * `llvm.exp.f32` calls (jnp.exp, the logistic's exp) are renamed to xla.exp.f32 when a model is
 * loaded (specializer/capture/intrinsics.py), so every exp a model computes is this one. */
#include <math.h>
#include <stdint.h>
#include <string.h>

/* One VFMA: __builtin_fmaf would be a call of newlib's fmaf (software, through double) because
 * the build keeps math errno; the elementwise builtin is always llvm.fma. */
#define FMA(a, b, c) __builtin_elementwise_fma((a), (b), (c))

float libjit_xla_tanh_f32(float x) __asm__("xla.tanh.f32");
float libjit_xla_erf_f32(float x) __asm__("xla.erf.f32");
float libjit_xla_exp_f32(float x) __asm__("xla.exp.f32");
float libjit_xla_expm1_f32(float x) __asm__("xla.expm1.f32");
float libjit_xla_log1p_f32(float x) __asm__("xla.log1p.f32");
float libjit_xla_rsqrt_f32(float x) __asm__("xla.rsqrt.f32");
float libjit_xla_atan_f32(float x) __asm__("xla.atan.f32");
float libjit_xla_sin_f32(float x) __asm__("xla.sin.f32");
float libjit_xla_cos_f32(float x) __asm__("xla.cos.f32");

float libjit_xla_erf_f32(float x) { return erff(x); }
float libjit_xla_expm1_f32(float x) { return expm1f(x); }
float libjit_xla_log1p_f32(float x) { return log1pf(x); }
float libjit_xla_atan_f32(float x) { return atanf(x); }
float libjit_xla_sin_f32(float x) { return sinf(x); }
float libjit_xla_cos_f32(float x) { return cosf(x); }

/* 1/sqrt(x) as VSQRT + VDIV rounds twice (up to 1.3 ulp measured); one Newton step on the
 * exact residual 1 - x*y*y (y*y split exactly with VFMA) brings it within XLA's 1 ulp.
 * Tiny and huge x are scaled by 2^64 so y*y neither overflows nor goes subnormal.
 * IEEE edges come from the first estimate: +0 -> +inf, -0 -> -inf, +inf -> +0, x < 0 or NaN -> NaN. */
float libjit_xla_rsqrt_f32(float x)
{
  if (!(x > 0.0f) || x == __builtin_inff()) {
    return 1.0f / __builtin_sqrtf(x);
  }
  float scale = 1.0f;
  if (x < 0x1p-100f) {
    x *= 0x1p64f;
    scale = 0x1p32f;
  } else if (x > 0x1p100f) {
    x *= 0x1p-64f;
    scale = 0x1p-32f;
  }
  float y = 1.0f / __builtin_sqrtf(x);
  float hi = y * y;
  float lo = FMA(y, y, -hi);  /* y*y == hi + lo exactly */
  float r = FMA(-x, hi, 1.0f) - x * lo;
  return FMA(0.5f * y, r, y) * scale;
}

/* p * 2^k for the k and p of libjit_xla_exp_f32 at |x| > 87 (k outside -125..125), behind one
 * unlikely branch (inlined: the float LSTM 754,204 -> 745,372 est. cycles against a call). */
static inline float exp_scale_edges(float x, float p, int32_t k)
{
  if (!(x <= 0x1.62e42ep6f)) { /* above ln(FLT_MAX): inf; NaN: itself */
    return x + __builtin_inff();
  }
  if (x < -0x1.9fe368p6f) { /* below ln(2^-150): rounds to 0 */
    return 0.0f;
  }
  const int32_t e = k < -125 ? k + 100 : (k > 127 ? k - 1 : k);
  const uint32_t sb = (uint32_t)(e + 127) << 23;
  float s;
  memcpy(&s, &sb, 4);
  const float y = p * s;
  return k < -125 ? y * 0x1p-100f : (k > 127 ? y * 2.0f : y);
}

/* e^x as 2^k e^r: k = x / ln 2 rounded to an integer (the 1.5 * 2^23 trick), r = x - k ln 2 by
 * two FMAs (ln 2's top 16 bits, so k * hi is exact, then the rest), e^r by its degree-7 Taylor
 * polynomial in Horner form with FMA, then scaled by 2^k in the exponent bits (below 2^-125 by
 * 2^(k+100) and 2^-100, so the one rounding is the last multiply's). Checked on the host over
 * every float32 input against exp in float64: within 0.94 ulp for normal results, 0.85 for
 * subnormal ones, inf and NaN where they belong (XLA's own: 6 and 27). About 67 est. cycles a
 * call on the M4, newlib's expf about 118. */
float libjit_xla_exp_f32(float x)
{
  const float magic = 0x1.8p23f, t = FMA(x, 0x1.715476p0f, magic), kf = t - magic;
  uint32_t tb;
  memcpy(&tb, &t, 4);
  const int32_t k = (int32_t)(tb - 0x4b400000u);
  float r = FMA(-kf, 0x1.62e400p-1f, x);
  r = FMA(-kf, 0x1.7f7d1cp-20f, r);
  float p = 0x1.a01a02p-13f; /* 1/7!, 1/6!, ..., 1/2, 1, 1 */
  p = FMA(p, r, 0x1.6c16c2p-10f);
  p = FMA(p, r, 0x1.111112p-7f);
  p = FMA(p, r, 0x1.555556p-5f);
  p = FMA(p, r, 0x1.555556p-3f);
  p = FMA(p, r, 0x1p-1f);
  p = FMA(p, r, 1.0f);
  p = FMA(p, r, 1.0f);
  if (__builtin_expect(!(__builtin_fabsf(x) <= 87.0f), 0)) { /* inf, NaN, near overflow, subnormal results */
    return exp_scale_edges(x, p, k);
  }
  const uint32_t sb = (uint32_t)(k + 127) << 23; /* |k| <= 126 here: 2^k normal, one rounding */
  float s;
  memcpy(&s, &sb, 4);
  return p * s;
}

/* tanh: below |x| = 0.5625, x + x^3 P(x^2) with P of degree 4 fitted to tanh (relative error
 * 1.3e-9 in float64, then rounded to float32); above, 1 - 2 / (e^2|x| + 1) with libjit's exp, where
 * the result is at least 0.5, so the subtraction loses nothing; +-1 beyond 9.1 (1 - tanh(x) <
 * 2^-25 there); x itself below 2^-12 (and for +-0 and the subnormals). Checked on the host over
 * every float32 input against tanh in float64: within 1.53 ulp (1.5247 at 0.565, where the quotient's
 * error is largest against the result), NaN and signs where they belong (XLA's budget: 3). About
 * 35 est. cycles a call below 0.5625, 95 above; newlib's tanhf over expm1f about 180. */
float libjit_xla_tanh_f32(float x)
{
  const float a = __builtin_fabsf(x);
  if (a < 0x1.2p-1f) {
    if (a < 0x1p-12f) {
      return x;
    }
    const float u = x * x;
    float p = -0x1.94ffeep-8f;
    p = FMA(p, u, 0x1.582fa8p-6f);
    p = FMA(p, u, -0x1.b90946p-5f);
    p = FMA(p, u, 0x1.110c72p-3f);
    p = FMA(p, u, -0x1.555548p-2f);
    return FMA(x * u, p, x);
  }
  if (!(a < 9.1f)) { /* NaN: itself */
    return a == a ? __builtin_copysignf(1.0f, x) : x;
  }
  return __builtin_copysignf(1.0f - 2.0f / (libjit_xla_exp_f32(2.0f * a) + 1.0f), x);
}

/* `llvm.roundeven.f32` (jnp.round) becomes a call of roundevenf, which newlib lacks. The FPv4
 * unit has no VRINTN; rintf rounds to nearest-even in the default rounding mode, which the
 * firmware never changes. */
float roundevenf(float x) { return rintf(x); }
