/* libjit_conv_transpose2d_f32: a 2-D convolution whose input is dilated (see libjit_f32.h).
 *
 * A transposed convolution reaches XLA as a convolution with input (base) dilation, the
 * transposed stride, and sometimes window reversal. Zero-stuffing the input would multiply
 * (b_h*b_w - 1) zeros for every real product; instead each output pixel sums only over the
 * taps that land on an input pixel. Along one axis those taps are an arithmetic progression
 * (tap_progression), so there is no per-tap test and no scratch.
 *
 * Per output pixel and group, blocks of 4 output channels are summed in registers over the
 * taps and the group's input channels: per input channel one input load serves 4 MACs.
 */
#include "libjit_f32.h"

/* x mod m in [0, m), m > 0. */
static int32_t mod_pos(int32_t x, int32_t m)
{
  int32_t r = x % m;
  return r < 0 ? r + m : r;
}

/* Taps t in [0, k) of one output coordinate land at p = base + t*dil in the dilated input,
 * which holds input index p / bdil where p is a multiple of bdil in [0, (size-1)*bdil]. Those
 * t are *t0, *t0 + *step, ... below *t1 (none when *t0 >= *t1). */
static void tap_progression(int32_t base, int32_t dil, int32_t bdil, int32_t k, int32_t size,
                            int32_t *t0, int32_t *step, int32_t *t1)
{
  int32_t s = 1;
  while ((s * dil) % bdil)
    s++; /* s <= bdil */
  int32_t t = 0; /* the first aligned tap at or past the input's start; p grows with t */
  while (t < k && (base + t * dil < 0 || mod_pos(base + t * dil, bdil)))
    t++;
  const int32_t last = (size - 1) * bdil - base; /* p <= (size-1)*bdil <=> t*dil <= last */
  int32_t hi = last < 0 ? 0 : last / dil + 1;
  if (hi > k)
    hi = k;
  *t0 = t;
  *step = s;
  *t1 = hi;
}

void libjit_conv_transpose2d_f32(float *out, const float *in, const float *filter, int32_t batch,
                                 int32_t in_h, int32_t in_w, int32_t in_c, int32_t out_h,
                                 int32_t out_w, int32_t out_c, int32_t k_h, int32_t k_w,
                                 int32_t stride_h, int32_t stride_w, int32_t pad_top,
                                 int32_t pad_left, int32_t dil_h, int32_t dil_w, int32_t groups,
                                 int32_t bdil_h, int32_t bdil_w, int32_t reverse)
{
  if (batch <= 0 || out_h <= 0 || out_w <= 0 || out_c <= 0 || groups <= 0)
    return;
  if (dil_h <= 0)
    dil_h = 1;
  if (dil_w <= 0)
    dil_w = 1;
  if (bdil_h <= 0)
    bdil_h = 1;
  if (bdil_w <= 0)
    bdil_w = 1;
  const int32_t cin_g = in_c / groups, cout_g = out_c / groups;
  const int32_t rev_h = reverse & 1, rev_w = (reverse >> 1) & 1;
  for (int32_t b = 0; b < batch; b++) {
    const float *image = in + b * in_h * in_w * in_c;
    for (int32_t y = 0; y < out_h; y++) {
      const int32_t py = y * stride_h - pad_top;
      int32_t ky0, sky, ky1;
      tap_progression(py, dil_h, bdil_h, k_h, in_h, &ky0, &sky, &ky1);
      for (int32_t x = 0; x < out_w; x++) {
        const int32_t px = x * stride_w - pad_left;
        int32_t kx0, skx, kx1;
        tap_progression(px, dil_w, bdil_w, k_w, in_w, &kx0, &skx, &kx1);
        for (int32_t g = 0; g < groups; g++) {
          const float *gin = image + g * cin_g;
          const float *gfilter = filter + g * cout_g;
          int32_t o = 0;
          for (; o + 4 <= cout_g; o += 4) {
            float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
            for (int32_t ky = ky0; ky < ky1; ky += sky) {
              const int32_t iy = (py + ky * dil_h) / bdil_h, fy = rev_h ? k_h - 1 - ky : ky;
              for (int32_t kx = kx0; kx < kx1; kx += skx) {
                const int32_t ix = (px + kx * dil_w) / bdil_w, fx = rev_w ? k_w - 1 - kx : kx;
                const float *ip = gin + (iy * in_w + ix) * in_c;
                const float *fp = gfilter + (fy * k_w + fx) * cin_g * out_c + o;
                for (int32_t ci = 0; ci < cin_g; ci++) {
                  const float v = ip[ci];
                  a0 += v * fp[0];
                  a1 += v * fp[1];
                  a2 += v * fp[2];
                  a3 += v * fp[3];
                  fp += out_c;
                }
              }
            }
            out[g * cout_g + o + 0] = a0;
            out[g * cout_g + o + 1] = a1;
            out[g * cout_g + o + 2] = a2;
            out[g * cout_g + o + 3] = a3;
          }
          for (; o < cout_g; o++) {
            float a = 0.0f;
            for (int32_t ky = ky0; ky < ky1; ky += sky) {
              const int32_t iy = (py + ky * dil_h) / bdil_h, fy = rev_h ? k_h - 1 - ky : ky;
              for (int32_t kx = kx0; kx < kx1; kx += skx) {
                const int32_t ix = (px + kx * dil_w) / bdil_w, fx = rev_w ? k_w - 1 - kx : kx;
                const float *ip = gin + (iy * in_w + ix) * in_c;
                const float *fp = gfilter + (fy * k_w + fx) * cin_g * out_c + o;
                for (int32_t ci = 0; ci < cin_g; ci++) {
                  a += ip[ci] * *fp;
                  fp += out_c;
                }
              }
            }
            out[g * cout_g + o] = a;
          }
        }
        out += out_c;
      }
    }
  }
}
