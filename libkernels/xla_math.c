/* The math functions XLA's CPU IR calls by name but does not define (`xla.F.f32`).
 *
 * XLA's ir-no-opt IR declares them; XLA's own compiler would later insert its polynomial
 * definitions. jax 0.10.2's XLA knows these names (its intrinsic library): exp, expm1, log1p,
 * rsqrt, tanh, erf, atan, sin, cos, fptrunc (f32 -> bf16, defined as IR by
 * specializer/capture/intrinsics.py, as are the vector forms `xla.F.vNf32`) and ldexp (f64 only, used
 * inside XLA's own f64 exp: never called from f32 code). Each is defined here within
 * the ulp error XLA's own gives (bounds measured on QEMU by tests/test_xla_math.py and listed in
 * docs/kernels.md). Where newlib's libm is accurate (its fdlibm float code, about
 * 1 ulp) it is used; rsqrt is ours. Per-call cycle estimates are in docs/kernels.md. */
#include <math.h>
#include <stdint.h>
#include <string.h>

float libjit_xla_tanh_f32(float x) __asm__("xla.tanh.f32");
float libjit_xla_erf_f32(float x) __asm__("xla.erf.f32");
float libjit_xla_exp_f32(float x) __asm__("xla.exp.f32");
float libjit_xla_expm1_f32(float x) __asm__("xla.expm1.f32");
float libjit_xla_log1p_f32(float x) __asm__("xla.log1p.f32");
float libjit_xla_rsqrt_f32(float x) __asm__("xla.rsqrt.f32");
float libjit_xla_atan_f32(float x) __asm__("xla.atan.f32");
float libjit_xla_sin_f32(float x) __asm__("xla.sin.f32");
float libjit_xla_cos_f32(float x) __asm__("xla.cos.f32");

float libjit_xla_tanh_f32(float x) { return tanhf(x); }
float libjit_xla_erf_f32(float x) { return erff(x); }
float libjit_xla_exp_f32(float x) { return expf(x); }
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
  float lo = __builtin_fmaf(y, y, -hi);  /* y*y == hi + lo exactly */
  float r = __builtin_fmaf(-x, hi, 1.0f) - x * lo;
  return __builtin_fmaf(0.5f * y, r, y) * scale;
}

/* `llvm.roundeven.f32` (jnp.round) becomes a call of roundevenf, which newlib lacks. The FPv4
 * unit has no VRINTN; rintf rounds to nearest-even in the default rounding mode, which the
 * firmware never changes. */
float roundevenf(float x) { return rintf(x); }
