/* libjit_dwconv_mult_f32: NHWC depthwise convolution with channel multiplier 2 or 4 (see
 * libjit_f32.h); output channel o = c * mult + q reads input channel c.
 *
 * libjit_conv2d_f32's depthwise path takes one output channel at a time when mult > 1, loading
 * each input value once per output it feeds and summing in one register. Here four consecutive
 * output channels (4 / mult input channels) are summed in registers, each input value loaded once
 * for its mult outputs, and two horizontally adjacent interior pixels share every weight load:
 * per tap 4 weights + 2 x 4/mult inputs for 8 MACs. At mult 2 an odd in_c leaves a tail of two
 * outputs of one input channel, summed the same way. Every output sums its taps in the order
 * ky, kx, as libjit_conv2d_f32 does.
 */
#include "libjit_f32.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Taps t in [*lo, *hi) with 0 <= base + t*dil < size, t < k (libjit_conv2d_f32's rule). */
static void taps_inside(int32_t base, int32_t dil, int32_t k, int32_t size, int32_t *lo, int32_t *hi)
{
  int32_t l = base < 0 ? (-base + dil - 1) / dil : 0;
  int32_t h = base < size ? (size - base + dil - 1) / dil : 0;
  if (h > k)
    h = k;
  if (l > h)
    l = h;
  *lo = l;
  *hi = h;
}

/* Outputs o .. o+n-1 (n = 4, or 2 at a mult-2 tail) of one pixel, or of two adjacent ones when
 * two (the second's input px_step floats on, its outputs out_c on). in and filter point at the
 * first tap inside the input; output o + i reads input channel (o + i) / mult. Always inlined
 * with literal mult, n and two, so the channel arithmetic folds and loads of one input value
 * for several outputs are one load. */
ALWAYS_INLINE void block(float *out, const float *in, const float *filter, int32_t o, int32_t mult,
                         int32_t n, int32_t two, int32_t out_c, int32_t k_w, int32_t row_step,
                         int32_t col_step, int32_t px_step, int32_t nky, int32_t nkx)
{
  float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
  float b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f;
  for (int32_t ky = 0; ky < nky; ky++) {
    const float *ip = in + ky * row_step + o / mult;
    const float *fp = filter + ky * k_w * out_c + o;
    for (int32_t kx = 0; kx < nkx; kx++) {
      const float w0 = fp[0], w1 = fp[1];
      const float x0 = ip[0], x1 = ip[1 / mult];
      a0 += x0 * w0;
      a1 += x1 * w1;
      if (n == 4) {
        const float w2 = fp[2], w3 = fp[3];
        const float x2 = ip[2 / mult], x3 = ip[3 / mult];
        a2 += x2 * w2;
        a3 += x3 * w3;
        if (two) {
          const float *jp = ip + px_step;
          b2 += jp[2 / mult] * w2;
          b3 += jp[3 / mult] * w3;
        }
      }
      if (two) {
        const float *jp = ip + px_step;
        b0 += jp[0] * w0;
        b1 += jp[1 / mult] * w1;
      }
      ip += col_step;
      fp += out_c;
    }
  }
  out[o + 0] = a0;
  out[o + 1] = a1;
  if (n == 4) {
    out[o + 2] = a2;
    out[o + 3] = a3;
  }
  if (two) {
    out[out_c + o + 0] = b0;
    out[out_c + o + 1] = b1;
    if (n == 4) {
      out[out_c + o + 2] = b2;
      out[out_c + o + 3] = b3;
    }
  }
}

/* Every output channel of one pixel (or two, when two). */
ALWAYS_INLINE void pixel(float *out, const float *in, const float *filter, int32_t mult, int32_t two,
                         int32_t out_c, int32_t k_w, int32_t row_step, int32_t col_step, int32_t px_step,
                         int32_t nky, int32_t nkx)
{
  int32_t o = 0;
  for (; o + 4 <= out_c; o += 4)
    block(out, in, filter, o, mult, 4, two, out_c, k_w, row_step, col_step, px_step, nky, nkx);
  if (mult == 2 && o < out_c)
    block(out, in, filter, o, 2, 2, two, out_c, k_w, row_step, col_step, px_step, nky, nkx);
}

ALWAYS_INLINE void run(float *out, const float *in, const float *filter, int32_t mult, int32_t batch,
                       int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
                       int32_t out_c, int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                       int32_t pad_top, int32_t pad_left, int32_t dil_h, int32_t dil_w)
{
  const int32_t row_step = dil_h * in_w * in_c, col_step = dil_w * in_c;
  for (int32_t b = 0; b < batch; b++) {
    const float *image = in + b * in_h * in_w * in_c;
    for (int32_t y = 0; y < out_h; y++) {
      const int32_t iy = y * stride_h - pad_top;
      int32_t ky0, ky1;
      taps_inside(iy, dil_h, k_h, in_h, &ky0, &ky1);
      for (int32_t x = 0; x < out_w; x++) {
        const int32_t ix = x * stride_w - pad_left;
        int32_t kx0, kx1;
        taps_inside(ix, dil_w, k_w, in_w, &kx0, &kx1);
        const int32_t full = ky0 == 0 && ky1 == k_h && kx0 == 0 && kx1 == k_w;
        if (full && x + 1 < out_w && ix + stride_w + (k_w - 1) * dil_w < in_w) {
          /* this pixel and the next are interior: both at once, the filter's own trip counts */
          pixel(out, image + (iy * in_w + ix) * in_c, filter, mult, 1, out_c, k_w, row_step, col_step, stride_w * in_c, k_h, k_w);
          out += 2 * out_c;
          x++;
          continue;
        }
        if (full) {
          pixel(out, image + (iy * in_w + ix) * in_c, filter, mult, 0, out_c, k_w, row_step, col_step, 0, k_h, k_w);
        } else if (ky0 < ky1 && kx0 < kx1) {
          /* pointers are only formed for taps inside the input */
          const int32_t first = ((iy + ky0 * dil_h) * in_w + ix + kx0 * dil_w) * in_c;
          pixel(out, image + first, filter + (ky0 * k_w + kx0) * out_c, mult, 0, out_c, k_w, row_step,
                col_step, 0, ky1 - ky0, kx1 - kx0);
        } else {
          for (int32_t o = 0; o < out_c; o++)
            out[o] = 0.0f;
        }
        out += out_c;
      }
    }
  }
}

void libjit_dwconv_mult_f32(float *out, const float *in, const float *filter, int32_t batch,
                            int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
                            int32_t out_c, int32_t k_h, int32_t k_w, int32_t stride_h,
                            int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dil_h,
                            int32_t dil_w)
{
  /* literal multipliers: each copy's channel arithmetic folds (a specialized call keeps one) */
  if (out_c == 2 * in_c)
    run(out, in, filter, 2, batch, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h,
        stride_w, pad_top, pad_left, dil_h, dil_w);
  else
    run(out, in, filter, 4, batch, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h,
        stride_w, pad_top, pad_left, dil_h, dil_w);
}
