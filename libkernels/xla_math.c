/* Scalar math functions that XLA's CPU IR calls by name but does not define.
 *
 * XLA emits `call float @xla.tanh.f32(float)` and `@xla.erf.f32`; its own runtime defines them
 * with polynomial approximations. Here they map onto newlib's libm, which is accurate to a few
 * ulp (JAX's reference values come from XLA's approximations, also within a few ulp).
 * The vector forms (`xla.tanh.v8f32`, ...) are generated as IR by specializer/intrinsics.py. */
#include <math.h>

float libjit_xla_tanh_f32(float x) __asm__("xla.tanh.f32");
float libjit_xla_erf_f32(float x) __asm__("xla.erf.f32");

float libjit_xla_tanh_f32(float x) { return tanhf(x); }
float libjit_xla_erf_f32(float x) { return erff(x); }

/* `llvm.roundeven.f32` (jnp.round) becomes a call of roundevenf, which newlib lacks. The FPv4
 * unit has no VRINTN; rintf rounds to nearest-even in the default rounding mode, which the
 * firmware never changes. */
float roundevenf(float x) { return rintf(x); }
