/* libjit_dwconv_s8 (see libjit_s8.h): int8 depthwise convolution (channel multiplier 1) for
 * weights known at compile time, the all-args build's replacement for CMSIS-NN's depthwise calls
 * (specializer/optimize/relayout_depthwise.py lays out its weights and folds its bias).
 *
 * NHWC depthwise keeps one channel's taps C bytes apart, so CMSIS-NN multiplies one tap per
 * instruction (SMLABB/SMLATT). Here each channel is first copied into a padded int16 plane, where
 * two horizontally adjacent taps are one word and one SMLAD multiplies both. The plane's padding
 * holds the input zero point and the bias has input_offset * (sum of the channel's weights) folded
 * in, so no offset is added per tap and no tap is tested against the input's edges: the sum is
 * CMSIS-NN's exactly (int32, no overflow for int8 x int8 over a window).
 *
 * Weights, int16, per channel and filter row: jw pairs (w0,w1), (w2,w3), ... (a missing last tap
 * 0) for an output at an even plane column; with stride 1, kw/2 more pairs (w1,w2), (w3,w4), ...
 * for its odd neighbour, which starts with w0 * the top half of the first pair.
 */
#include <string.h>

#include "libjit_s8.h"

#include "requant_s8.h"

static inline uint32_t pair(const int16_t *p)
{
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* The four outputs of a step, ch bytes apart. */
static inline void store4(int8_t *o, int32_t ch, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, const int32_t *r4,
                          int32_t fast, int32_t out_offset, int32_t act_min, int32_t act_max)
{
  o[0] = libjit_requant_s8(a0, r4, fast, out_offset, act_min, act_max);
  o[ch] = libjit_requant_s8(a1, r4, fast, out_offset, act_min, act_max);
  o[2 * ch] = libjit_requant_s8(a2, r4, fast, out_offset, act_min, act_max);
  o[3 * ch] = libjit_requant_s8(a3, r4, fast, out_offset, act_min, act_max);
}

int32_t libjit_dwconv_s8(int8_t *out, const int8_t *in, const int16_t *w, const int32_t *rq, int16_t *plane,
                         int32_t in_h, int32_t in_w, int32_t ch, int32_t kh, int32_t kw, int32_t stride_h,
                         int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t out_h, int32_t out_w,
                         int32_t plane_h, int32_t plane_w, int32_t pad_value, int32_t fast, int32_t out_offset,
                         int32_t act_min, int32_t act_max)
{
  const int32_t jw = (kw + 1) / 2, jv = stride_w == 1 ? kw / 2 : 0, wrow = 2 * (jw + jv);
  const int16_t *volatile opaque_w = w; /* see the four-output step */
  for (int32_t i = 0; i < plane_h * plane_w; i++) {
    plane[i] = (int16_t)pad_value;
  }
  for (int32_t c = 0; c < ch; c++) {
    for (int32_t y = 0; y < in_h; y++) {
      int16_t *row = plane + (y + pad_top) * plane_w + pad_left;
      const int8_t *src = in + y * in_w * ch + c;
      for (int32_t x = 0; x < in_w; x++) {
        row[x] = src[x * ch];
      }
    }
    const int16_t *wc = w + c * kh * wrow;
    const int32_t *r4 = rq + 4 * c;
    const uint32_t b = (uint32_t)r4[0];
    for (int32_t oy = 0; oy < out_h; oy++) {
      const int16_t *rows = plane + oy * stride_h * plane_w;
      int8_t *o = out + oy * out_w * ch + c;
      int32_t ox = 0;
      if (stride_w == 1) {
        /* Four outputs a step: per filter row nx input pairs and jw + jv weight pairs serve
           2 * (jw + jv) SMLAD/SMLATB (two outputs a step: 2 + (jw + jv) loads for jw + jv + 1;
           kw <= 14 here).
           The weights are read through an opaque copy of their address, per step, so they are
           not hoisted out of the unrolled row into registers there are not (spilled, then
           reloaded one before each use: no two loads pipelined). */
        const int32_t nx = jw > jv ? jw + 1 : jv + 2; /* input pairs a filter row of the step reads */
        for (; nx <= 8 && ox + 3 < out_w; ox += 4) {
          const int16_t *wq = opaque_w + c * kh * wrow;
          uint32_t a0 = b, a1 = b, a2 = b, a3 = b;
          for (int32_t ky = 0; ky < kh; ky++) {
            const int16_t *r = rows + ky * plane_w + ox;
            const int16_t *wr = wq + ky * wrow;
            uint32_t x[8], e[8], d[8]; /* input pairs at r + 2m; even weight pairs; odd ones */
            for (int32_t m = 0; m < nx; m++) {
              x[m] = pair(r + 2 * m);
            }
            for (int32_t j = 0; j < jw && j < 8; j++) {
              e[j] = pair(wr + 2 * j);
            }
            for (int32_t j = 0; j < jv && j < 8; j++) {
              d[j] = pair(wr + 2 * (jw + j));
            }
            a1 = (uint32_t)__builtin_arm_smlatb((int)x[0], (int)e[0], (int)a1);
            a3 = (uint32_t)__builtin_arm_smlatb((int)x[1], (int)e[0], (int)a3);
            for (int32_t j = 0; j < jw && j < 8; j++) {
              a0 = (uint32_t)__builtin_arm_smlad((int)x[j], (int)e[j], (int)a0);
              a2 = (uint32_t)__builtin_arm_smlad((int)x[j + 1], (int)e[j], (int)a2);
            }
            for (int32_t j = 0; j < jv && j < 8; j++) {
              a1 = (uint32_t)__builtin_arm_smlad((int)x[j + 1], (int)d[j], (int)a1);
              a3 = (uint32_t)__builtin_arm_smlad((int)x[j + 2], (int)d[j], (int)a3);
            }
          }
          store4(o + ox * ch, ch, a0, a1, a2, a3, r4, fast, out_offset, act_min, act_max);
        }
        for (; ox + 1 < out_w; ox += 2) {
          uint32_t a0 = b, a1 = b;
          for (int32_t ky = 0; ky < kh; ky++) {
            const int16_t *r = rows + ky * plane_w + ox;
            const int16_t *wr = wc + ky * wrow;
            const uint32_t p0 = pair(r);
            a0 = (uint32_t)__builtin_arm_smlad((int)p0, (int)pair(wr), (int)a0);
            a1 = (uint32_t)__builtin_arm_smlatb((int)p0, (int)pair(wr), (int)a1);
            for (int32_t j = 1; j < jw; j++) {
              a0 = (uint32_t)__builtin_arm_smlad((int)pair(r + 2 * j), (int)pair(wr + 2 * j), (int)a0);
            }
            for (int32_t j = 1; j <= jv; j++) {
              a1 = (uint32_t)__builtin_arm_smlad((int)pair(r + 2 * j), (int)pair(wr + 2 * (jw + j - 1)), (int)a1);
            }
          }
          o[ox * ch] = libjit_requant_s8(a0, r4, fast, out_offset, act_min, act_max);
          o[(ox + 1) * ch] = libjit_requant_s8(a1, r4, fast, out_offset, act_min, act_max);
        }
      }
      if (stride_w == 2) {
        /* Four outputs a step: output x of the step starts at input pair x, so a filter row's
           jw + 3 pairs and jw weight pairs serve 4 * jw SMLAD (one output: 2 * jw loads for jw). */
        for (; jw <= 5 && ox + 3 < out_w; ox += 4) {
          const int16_t *wq = opaque_w + c * kh * wrow;
          uint32_t a0 = b, a1 = b, a2 = b, a3 = b;
          for (int32_t ky = 0; ky < kh; ky++) {
            const int16_t *r = rows + ky * plane_w + 2 * ox;
            const int16_t *wr = wq + ky * wrow;
            uint32_t x[8], e[5];
            for (int32_t m = 0; m < jw + 3; m++) {
              x[m] = pair(r + 2 * m);
            }
            for (int32_t j = 0; j < jw; j++) {
              e[j] = pair(wr + 2 * j);
            }
            for (int32_t j = 0; j < jw; j++) {
              a0 = (uint32_t)__builtin_arm_smlad((int)x[j], (int)e[j], (int)a0);
              a1 = (uint32_t)__builtin_arm_smlad((int)x[j + 1], (int)e[j], (int)a1);
              a2 = (uint32_t)__builtin_arm_smlad((int)x[j + 2], (int)e[j], (int)a2);
              a3 = (uint32_t)__builtin_arm_smlad((int)x[j + 3], (int)e[j], (int)a3);
            }
          }
          store4(o + ox * ch, ch, a0, a1, a2, a3, r4, fast, out_offset, act_min, act_max);
        }
      }
      for (; ox < out_w; ox++) {
        uint32_t a0 = b;
        for (int32_t ky = 0; ky < kh; ky++) {
          const int16_t *r = rows + ky * plane_w + ox * stride_w;
          const int16_t *wr = wc + ky * wrow;
          for (int32_t j = 0; j < jw; j++) {
            a0 = (uint32_t)__builtin_arm_smlad((int)pair(r + 2 * j), (int)pair(wr + 2 * j), (int)a0);
          }
        }
        o[ox * ch] = libjit_requant_s8(a0, r4, fast, out_offset, act_min, act_max);
      }
    }
  }
  return 0; /* CMSIS-NN's ARM_CMSIS_NN_SUCCESS: the call it replaces returns a status */
}
