/* libjit_conv2d_f32: NHWC / HWIO f32 convolution (see libjit_f32.h).
 *
 * Paths:
 *   in_c/groups == 1 (depthwise, any multiplier; also in_c == 1)
 *       direct loop: per output pixel, blocks of 4 output channels summed in registers over the
 *       taps that fall inside the input (no scratch); interior pixels loop over the filter's
 *       own k_h x k_w, so a specialized kernel unrolls them
 *   1x1, stride 1, no padding, groups == 1
 *       the input pixels already are the patch matrix: jitk_gemm_f32 (4x4 register blocks)
 *       over whole images when out_w == in_w, else per output row (no scratch)
 *   everything else
 *       per batch, output row and group: im2col of the row into scratch [out_w][k_h*k_w*cin_g]
 *       (zeros for taps outside the input), then for groups == 1 jitk_gemm_f32 of it with the
 *       filter [k_h*k_w*in_c][out_c], for groups > 1 a strided product with the group's
 *       filter columns.
 */
#include "libjit_f32.h"

/* Taps t in [*lo, *hi) with 0 <= base + t*dil < size, t < k. */
static void tap_range(int32_t base, int32_t dil, int32_t k, int32_t size, int32_t *lo,
                      int32_t *hi)
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

/* The mult == 1 case of depthwise_pixel: blocks of 4 channels summed in registers. Always
 * inlined, so a call with constant nky / nkx has constant trip counts. */
static inline __attribute__((always_inline)) void
depthwise_pixel_m1(float *out, const float *in, const float *filter, int32_t out_c, int32_t k_w,
                   int32_t row_step, int32_t col_step, int32_t nky, int32_t nkx)
{
  int32_t c = 0;
  for (; c + 4 <= out_c; c += 4) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    for (int32_t ky = 0; ky < nky; ky++) {
      const float *ip = in + ky * row_step + c;
      const float *fp = filter + ky * k_w * out_c + c;
      for (int32_t kx = 0; kx < nkx; kx++) {
        a0 += ip[0] * fp[0];
        a1 += ip[1] * fp[1];
        a2 += ip[2] * fp[2];
        a3 += ip[3] * fp[3];
        ip += col_step;
        fp += out_c;
      }
    }
    out[c + 0] = a0;
    out[c + 1] = a1;
    out[c + 2] = a2;
    out[c + 3] = a3;
  }
  for (; c < out_c; c++) {
    float a = 0.0f;
    for (int32_t ky = 0; ky < nky; ky++) {
      const float *ip = in + ky * row_step + c;
      const float *fp = filter + ky * k_w * out_c + c;
      for (int32_t kx = 0; kx < nkx; kx++) {
        a += *ip * *fp;
        ip += col_step;
        fp += out_c;
      }
    }
    out[c] = a;
  }
}

/* Two horizontally adjacent interior output pixels of the mult == 1 case: each weight loaded
 * once serves both (per 4 channels and tap: 4 weight + 8 input loads for 8 MACs instead of
 * 8 for 4). Each output's sum runs over the taps in the same order as depthwise_pixel_m1's,
 * so results are bit-identical. px_step: input floats between the two pixels. */
static inline __attribute__((always_inline)) void
depthwise_2px_m1(float *out, const float *in, const float *filter, int32_t out_c, int32_t k_h,
                 int32_t k_w, int32_t row_step, int32_t col_step, int32_t px_step)
{
  int32_t c = 0;
  for (; c + 4 <= out_c; c += 4) {
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    float b0 = 0.0f, b1 = 0.0f, b2 = 0.0f, b3 = 0.0f;
    for (int32_t ky = 0; ky < k_h; ky++) {
      const float *ip = in + ky * row_step + c;
      const float *fp = filter + ky * k_w * out_c + c;
      for (int32_t kx = 0; kx < k_w; kx++) {
        const float w0 = fp[0], w1 = fp[1], w2 = fp[2], w3 = fp[3];
        const float *jp = ip + px_step;
        a0 += ip[0] * w0;
        a1 += ip[1] * w1;
        a2 += ip[2] * w2;
        a3 += ip[3] * w3;
        b0 += jp[0] * w0;
        b1 += jp[1] * w1;
        b2 += jp[2] * w2;
        b3 += jp[3] * w3;
        ip += col_step;
        fp += out_c;
      }
    }
    out[c + 0] = a0;
    out[c + 1] = a1;
    out[c + 2] = a2;
    out[c + 3] = a3;
    out[out_c + c + 0] = b0;
    out[out_c + c + 1] = b1;
    out[out_c + c + 2] = b2;
    out[out_c + c + 3] = b3;
  }
  for (; c < out_c; c++) {
    float a = 0.0f, b = 0.0f;
    for (int32_t ky = 0; ky < k_h; ky++) {
      const float *ip = in + ky * row_step + c;
      const float *fp = filter + ky * k_w * out_c + c;
      for (int32_t kx = 0; kx < k_w; kx++) {
        a += ip[0] * *fp;
        b += ip[px_step] * *fp;
        ip += col_step;
        fp += out_c;
      }
    }
    out[c] = a;
    out[out_c + c] = b;
  }
}

/* One output pixel of a conv with one input channel per group: out[o], o = c*mult + q, is the
 * sum of in[c] * filter[ky][kx][0][o] over nky x nkx taps. in and filter point at the first tap
 * inside the input; row_step / col_step are the input strides between taps. */
static void depthwise_pixel(float *out, const float *in, const float *filter, int32_t in_c,
                            int32_t out_c, int32_t mult, int32_t k_h, int32_t k_w, int32_t row_step,
                            int32_t col_step, int32_t nky, int32_t nkx)
{
  if (mult == 1) {
    /* interior pixels (every tap inside the input) get the filter's own sizes as trip counts:
     * constants once the kernel is specialized, so the tap loops unroll */
    if (nky == k_h && nkx == k_w)
      depthwise_pixel_m1(out, in, filter, out_c, k_w, row_step, col_step, k_h, k_w);
    else
      depthwise_pixel_m1(out, in, filter, out_c, k_w, row_step, col_step, nky, nkx);
    return;
  }
  for (int32_t c = 0; c < in_c; c++) {
    const int32_t o0 = c * mult;
    int32_t q = 0;
    for (; q + 4 <= mult; q += 4) {
      float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
      for (int32_t ky = 0; ky < nky; ky++) {
        const float *ip = in + ky * row_step + c;
        const float *fp = filter + ky * k_w * out_c + o0 + q;
        for (int32_t kx = 0; kx < nkx; kx++) {
          float v = *ip;
          a0 += v * fp[0];
          a1 += v * fp[1];
          a2 += v * fp[2];
          a3 += v * fp[3];
          ip += col_step;
          fp += out_c;
        }
      }
      out[o0 + q + 0] = a0;
      out[o0 + q + 1] = a1;
      out[o0 + q + 2] = a2;
      out[o0 + q + 3] = a3;
    }
    for (; q < mult; q++) {
      float a = 0.0f;
      for (int32_t ky = 0; ky < nky; ky++) {
        const float *ip = in + ky * row_step + c;
        const float *fp = filter + ky * k_w * out_c + o0 + q;
        for (int32_t kx = 0; kx < nkx; kx++) {
          a += *ip * *fp;
          ip += col_step;
          fp += out_c;
        }
      }
      out[o0 + q] = a;
    }
  }
}

static void depthwise(float *out, const float *in, const float *filter, int32_t batch,
                      int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h, int32_t out_w,
                      int32_t out_c, int32_t k_h, int32_t k_w, int32_t stride_h, int32_t stride_w,
                      int32_t pad_top, int32_t pad_left, int32_t dil_h, int32_t dil_w)
{
  const int32_t mult = out_c / in_c;
  const int32_t row_step = dil_h * in_w * in_c, col_step = dil_w * in_c;
  for (int32_t b = 0; b < batch; b++) {
    const float *image = in + b * in_h * in_w * in_c;
    for (int32_t y = 0; y < out_h; y++) {
      const int32_t iy = y * stride_h - pad_top;
      int32_t ky0, ky1;
      tap_range(iy, dil_h, k_h, in_h, &ky0, &ky1);
      for (int32_t x = 0; x < out_w; x++) {
        const int32_t ix = x * stride_w - pad_left;
        int32_t kx0, kx1;
        tap_range(ix, dil_w, k_w, in_w, &kx0, &kx1);
        if (mult == 1 && x + 1 < out_w && ky0 == 0 && ky1 == k_h && kx0 == 0 && kx1 == k_w &&
            ix + stride_w + (k_w - 1) * dil_w < in_w) {
          /* this pixel and the next are interior: both at once */
          depthwise_2px_m1(out, image + (iy * in_w + ix) * in_c, filter, out_c, k_h, k_w,
                           row_step, col_step, stride_w * in_c);
          out += 2 * out_c;
          x++;
          continue;
        }
        if (ky0 < ky1 && kx0 < kx1) {
          /* pointers are only formed for taps inside the input */
          const int32_t first = ((iy + ky0 * dil_h) * in_w + ix + kx0 * dil_w) * in_c;
          depthwise_pixel(out, image + first, filter + (ky0 * k_w + kx0) * out_c, in_c, out_c,
                          mult, k_h, k_w, row_step, col_step, ky1 - ky0, kx1 - kx0);
        } else {
          for (int32_t o = 0; o < out_c; o++)
            out[o] = 0.0f;
        }
        out += out_c;
      }
    }
  }
}

/* Patch matrix of output row y, group g: scratch[x][ky][kx][ci], zero outside the input. */
static void im2col_row(float *scratch, const float *image, int32_t in_h, int32_t in_w,
                       int32_t in_c, int32_t cin_g, int32_t out_w, int32_t k_h, int32_t k_w,
                       int32_t stride_w, int32_t iy0, int32_t pad_left, int32_t dil_h,
                       int32_t dil_w)
{
  int32_t ky0, ky1;
  tap_range(iy0, dil_h, k_h, in_h, &ky0, &ky1);
  for (int32_t x = 0; x < out_w; x++) {
    const int32_t ix0 = x * stride_w - pad_left;
    int32_t kx0, kx1;
    tap_range(ix0, dil_w, k_w, in_w, &kx0, &kx1);
    for (int32_t ky = 0; ky < k_h; ky++) {
      for (int32_t kx = 0; kx < k_w; kx++) {
        if (ky >= ky0 && ky < ky1 && kx >= kx0 && kx < kx1) {
          /* pointers are only formed for taps inside the input */
          const float *src = image + ((iy0 + ky * dil_h) * in_w + ix0 + kx * dil_w) * in_c;
          for (int32_t ci = 0; ci < cin_g; ci++)
            scratch[ci] = src[ci];
        } else {
          for (int32_t ci = 0; ci < cin_g; ci++)
            scratch[ci] = 0.0f;
        }
        scratch += cin_g;
      }
    }
  }
}

void libjit_conv2d_f32(float *out, const float *in, const float *filter, float *scratch,
                       int32_t batch, int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h,
                       int32_t out_w, int32_t out_c, int32_t k_h, int32_t k_w, int32_t stride_h,
                       int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dil_h,
                       int32_t dil_w, int32_t groups)
{
  if (batch <= 0 || out_h <= 0 || out_w <= 0 || out_c <= 0 || groups <= 0)
    return;
  if (dil_h <= 0)
    dil_h = 1;
  if (dil_w <= 0)
    dil_w = 1;
  const int32_t cin_g = in_c / groups, cout_g = out_c / groups;
  const int32_t patch = k_h * k_w * cin_g;
  if (patch <= 0 || in_h <= 0 || in_w <= 0) {
    for (int32_t i = 0; i < batch * out_h * out_w * out_c; i++)
      out[i] = 0.0f;
    return;
  }
  if (cin_g == 1) {
    depthwise(out, in, filter, batch, in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h,
              stride_w, pad_top, pad_left, dil_h, dil_w);
    return;
  }
  if (groups == 1 && k_h == 1 && k_w == 1 && stride_h == 1 && stride_w == 1 && pad_top == 0 &&
      pad_left == 0 && out_h <= in_h && out_w <= in_w) {
    if (out_w == in_w && out_h == in_h) {
      jitk_gemm_f32(out, in, filter, batch * out_h * out_w, in_c, out_c);
      return;
    }
    for (int32_t b = 0; b < batch; b++) {
      const float *image = in + b * in_h * in_w * in_c;
      if (out_w == in_w) {
        jitk_gemm_f32(out, image, filter, out_h * out_w, in_c, out_c);
        out += out_h * out_w * out_c;
        continue;
      }
      for (int32_t y = 0; y < out_h; y++) {
        jitk_gemm_f32(out, image + y * in_w * in_c, filter, out_w, in_c, out_c);
        out += out_w * out_c;
      }
    }
    return;
  }
  for (int32_t b = 0; b < batch; b++) {
    const float *image = in + b * in_h * in_w * in_c;
    for (int32_t y = 0; y < out_h; y++) {
      const int32_t iy0 = y * stride_h - pad_top;
      for (int32_t g = 0; g < groups; g++) {
        im2col_row(scratch, image + g * cin_g, in_h, in_w, in_c, cin_g, out_w, k_h, k_w,
                   stride_w, iy0, pad_left, dil_h, dil_w);
        if (groups == 1)
          jitk_gemm_f32(out, scratch, filter, out_w, patch, out_c);
        else
          jitk_gemm_strided_f32(out + g * cout_g, out_c, scratch, patch, 1, filter + g * cout_g,
                                out_c, 1, out_w, patch, cout_g);
      }
      out += out_w * out_c;
    }
  }
}
