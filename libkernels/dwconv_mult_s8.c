/* libjit_dwconv_mult_s8 (see libjit_s8.h): libjit_dwconv_s8 with a channel multiplier. Output
 * channel c * mult + m reads input channel c: one copy of the input channel into the int16 plane
 * serves its mult outputs, each computed as dwconv_s8.c computes a channel (weights and
 * requantization records per output channel, laid out as there).
 *
 * The loop is dwconv_s8.c's with the output channel loop added (its four-output steps at stride
 * 1 and 2 included). It is a copy, not a shared helper: moved into an always-inline helper,
 * libjit_dwconv_s8's own specialized code came out 1.4% slower (the kernel row
 * depthwise3x3_int8, all-args 493,795 -> 500,707 est. cycles).
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

/* The four outputs of a step, out_ch bytes apart. */
static inline void store4(int8_t *o, int32_t out_ch, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                          const int32_t *r4, int32_t fast, int32_t out_offset, int32_t act_min, int32_t act_max)
{
  o[0] = libjit_requant_s8(a0, r4, fast, out_offset, act_min, act_max);
  o[out_ch] = libjit_requant_s8(a1, r4, fast, out_offset, act_min, act_max);
  o[2 * out_ch] = libjit_requant_s8(a2, r4, fast, out_offset, act_min, act_max);
  o[3 * out_ch] = libjit_requant_s8(a3, r4, fast, out_offset, act_min, act_max);
}

int32_t libjit_dwconv_mult_s8(int8_t *out, const int8_t *in, const int16_t *w, const int32_t *rq, int16_t *plane,
                              int32_t in_h, int32_t in_w, int32_t ch, int32_t kh, int32_t kw, int32_t stride_h,
                              int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t out_h, int32_t out_w,
                              int32_t plane_h, int32_t plane_w, int32_t pad_value, int32_t fast,
                              int32_t out_offset, int32_t act_min, int32_t act_max, int32_t mult)
{
  const int32_t jw = (kw + 1) / 2, jv = stride_w == 1 ? kw / 2 : 0, wrow = 2 * (jw + jv), out_ch = ch * mult;
  const int16_t *volatile opaque_w = w; /* as in dwconv_s8.c's four-output step */
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
    /* one copy of the input channel serves its mult output channels */
    for (int32_t oc = c * mult; oc < (c + 1) * mult; oc++) {
      const int16_t *wc = w + oc * kh * wrow;
      const int32_t *r4 = rq + 4 * oc;
      const uint32_t b = (uint32_t)r4[0];
      for (int32_t oy = 0; oy < out_h; oy++) {
        const int16_t *rows = plane + oy * stride_h * plane_w;
        int8_t *o = out + oy * out_w * out_ch + oc;
        int32_t ox = 0;
        if (stride_w == 1) {
          /* Four outputs a step, as dwconv_s8.c's (kw <= 14 here) */
          const int32_t nx = jw > jv ? jw + 1 : jv + 2;
          for (; nx <= 8 && ox + 3 < out_w; ox += 4) {
            const int16_t *wq = opaque_w + oc * kh * wrow;
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
            store4(o + ox * out_ch, out_ch, a0, a1, a2, a3, r4, fast, out_offset, act_min, act_max);
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
            o[ox * out_ch] = libjit_requant_s8(a0, r4, fast, out_offset, act_min, act_max);
            o[(ox + 1) * out_ch] = libjit_requant_s8(a1, r4, fast, out_offset, act_min, act_max);
          }
        }
        if (stride_w == 2) { /* four outputs a step, as dwconv_s8.c's */
          for (; jw <= 5 && ox + 3 < out_w; ox += 4) {
            const int16_t *wq = opaque_w + oc * kh * wrow;
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
            store4(o + ox * out_ch, out_ch, a0, a1, a2, a3, r4, fast, out_offset, act_min, act_max);
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
          o[ox * out_ch] = libjit_requant_s8(a0, r4, fast, out_offset, act_min, act_max);
        }
      }
    }
  }
  return 0;
}
