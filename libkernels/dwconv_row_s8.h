/* One channel's int16 plane and one output row of it, for the all-args depthwise kernels
 * (dwconv_s8.c, dwconv_mult_s8.c; specializer/optimize/relayout_depthwise.py lays out the weights).
 *
 * Weights, int16, per output channel and filter row, as the SMLADs read them:
 * - stride 1: kw/2 even pairs E_j = (w_2j, w_2j+1), then (kw-1)/2 odd pairs D_j = (w_2j+1, w_2j+2)
 *   (kw == 1: the one word (w0, 0)). An output at an even plane column multiplies its taps two at a
 *   time with the E_j and an odd kw's last tap with the top half of the last D; its odd neighbour
 *   takes w0 from the bottom of E_0, then the D_j, and an even kw's last tap from the top of the
 *   last E. So kw - 1 words a row serve both, none holding a zero.
 * - stride 2: (kw+1)/2 pairs (w0,w1), (w2,w3), ... (a missing last tap 0).
 *
 * Helpers are always inlined into each kernel, whose specialized clone then has every shape constant.
 */
#ifndef LIBJIT_DWCONV_ROW_S8_H
#define LIBJIT_DWCONV_ROW_S8_H

#include <string.h>

#include "libjit_s8.h"

#include "requant_s8.h"

#define DW_INLINE static inline __attribute__((always_inline))

DW_INLINE uint32_t dw_pair(const int16_t *p)
{
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* Words per filter row (the layout above). */
DW_INLINE int32_t dw_row_words(int32_t kw, int32_t stride_w)
{
  return stride_w == 1 ? (kw > 1 ? kw - 1 : 1) : (kw + 1) / 2;
}

/* Input channel c of the NHWC input into the plane's inside (its padding already holds the zero
 * point). */
DW_INLINE void dw_copy_channel(int16_t *plane, const int8_t *in, int32_t c, int32_t ch, int32_t in_h, int32_t in_w,
                               int32_t pad_top, int32_t pad_left, int32_t plane_w)
{
  for (int32_t y = 0; y < in_h; y++) {
    int16_t *row = plane + (y + pad_top) * plane_w + pad_left;
    const int8_t *src = in + y * in_w * ch + c;
    for (int32_t x = 0; x < in_w; x++) {
      row[x] = src[x * ch];
    }
  }
}

/* Stride 1: the output at an even column from its input words x[0..] (row layout above). */
DW_INLINE uint32_t dw_even(uint32_t a, const uint32_t *x, const uint32_t *e, int32_t kw)
{
  const uint32_t *d = e + kw / 2;
  for (int32_t j = 0; j < kw / 2; j++) {
    a = (uint32_t)__builtin_arm_smlad((int)x[j], (int)e[j], (int)a);
  }
  if (kw == 1) {
    a = (uint32_t)__builtin_arm_smlabb((int)x[0], (int)e[0], (int)a);
  } else if (kw & 1) {
    a = (uint32_t)__builtin_arm_smlabt((int)x[kw / 2], (int)d[kw / 2 - 1], (int)a);
  }
  return a;
}

/* Stride 1: its odd neighbour, from the same words. */
DW_INLINE uint32_t dw_odd(uint32_t a, const uint32_t *x, const uint32_t *e, int32_t kw)
{
  const uint32_t *d = e + kw / 2;
  a = (uint32_t)__builtin_arm_smlatb((int)x[0], (int)e[0], (int)a);
  for (int32_t j = 0; j < (kw - 1) / 2; j++) {
    a = (uint32_t)__builtin_arm_smlad((int)x[j + 1], (int)d[j], (int)a);
  }
  if (kw > 1 && !(kw & 1)) {
    a = (uint32_t)__builtin_arm_smlabt((int)x[kw / 2], (int)e[kw / 2 - 1], (int)a);
  }
  return a;
}

/* Stride 2: one output from its input words and the row's pairs. */
DW_INLINE uint32_t dw_s2(uint32_t a, const uint32_t *x, const uint32_t *e, int32_t jw)
{
  for (int32_t j = 0; j < jw; j++) {
    a = (uint32_t)__builtin_arm_smlad((int)x[j], (int)e[j], (int)a);
  }
  return a;
}

/* Loads n words from p, two int16 apart, back to back. p is word-aligned wherever the steps call
 * this (the plane and the weights are align-4 globals, the plane's width even, a step's first
 * column a multiple of 4 at stride 1 and of 2 input words at stride 2, a filter row 4 * nw bytes):
 * said so, LLVM reads words instead of halfword-aligned pairs, 1% fewer est. cycles. */
DW_INLINE void dw_load(uint32_t *v, const int16_t *p, int32_t n)
{
  const uint32_t *q = (const uint32_t *)__builtin_assume_aligned(p, 4);
  for (int32_t m = 0; m < n; m++) {
    v[m] = q[m];
  }
}

/* The four outputs of a step, step bytes apart. */
DW_INLINE void dw_store4(int8_t *o, int32_t step, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, const int32_t *r4,
                         int32_t fast, int32_t out_offset, int32_t act_min, int32_t act_max)
{
  o[0] = libjit_requant_s8(a0, r4, fast, out_offset, act_min, act_max);
  o[step] = libjit_requant_s8(a1, r4, fast, out_offset, act_min, act_max);
  o[2 * step] = libjit_requant_s8(a2, r4, fast, out_offset, act_min, act_max);
  o[3 * step] = libjit_requant_s8(a3, r4, fast, out_offset, act_min, act_max);
}

/* One output row of one output channel: out_w outputs step bytes apart from o, the filter's top row
 * at plane row `rows`. w: the channel's weights; wv: a volatile copy of that address, read once per
 * four-output step so LLVM does not hoist a step's weight loads out of the unrolled row into
 * registers there are not (it did: spilled, then reloaded one before each use). */
DW_INLINE void dw_row(int8_t *o, int32_t step, const int16_t *rows, int32_t plane_w, const int16_t *w,
                      const int16_t *const volatile *wv, const int32_t *r4, int32_t kh, int32_t kw, int32_t stride_w,
                      int32_t out_w, int32_t fast, int32_t out_offset, int32_t act_min, int32_t act_max)
{
  const int32_t nw = dw_row_words(kw, stride_w), jw = (kw + 1) / 2;
  const uint32_t b = (uint32_t)r4[0];
  int32_t ox = 0;
  if (stride_w == 1) {
    /* Four outputs a step: a filter row's kw/2 + 2 input words and kw - 1 weight words loaded
       first, back to back, then 4 (kw/2 + ...) multiply-adds (kw <= 13 here). */
    const int32_t nx = kw / 2 + 2;
    for (; kw <= 13 && ox + 3 < out_w; ox += 4) {
      const int16_t *wq = *wv;
      uint32_t a0 = b, a1 = b, a2 = b, a3 = b;
      for (int32_t ky = 0; ky < kh; ky++) {
        uint32_t x[8], e[12];
        dw_load(x, rows + ky * plane_w + ox, nx);
        dw_load(e, wq + ky * 2 * nw, nw);
        a0 = dw_even(a0, x, e, kw);
        a1 = dw_odd(a1, x, e, kw);
        a2 = dw_even(a2, x + 1, e, kw);
        a3 = dw_odd(a3, x + 1, e, kw);
      }
      dw_store4(o + ox * step, step, a0, a1, a2, a3, r4, fast, out_offset, act_min, act_max);
    }
    /* Two, then one (any kw: the words read where used). */
    for (; ox < out_w; ox += 2) {
      uint32_t a0 = b, a1 = b;
      for (int32_t ky = 0; ky < kh; ky++) {
        const int16_t *r = rows + ky * plane_w + ox, *wr = w + ky * 2 * nw, *dr = wr + 2 * (kw / 2);
        for (int32_t j = 0; j < kw / 2; j++) {
          a0 = (uint32_t)__builtin_arm_smlad((int)dw_pair(r + 2 * j), (int)dw_pair(wr + 2 * j), (int)a0);
        }
        if (kw == 1) {
          a0 = (uint32_t)__builtin_arm_smlabb((int)dw_pair(r), (int)dw_pair(wr), (int)a0);
        } else if (kw & 1) {
          a0 = (uint32_t)__builtin_arm_smlabt((int)dw_pair(r + 2 * (kw / 2)), (int)dw_pair(dr + 2 * (kw / 2 - 1)),
                                              (int)a0);
        }
        a1 = (uint32_t)__builtin_arm_smlatb((int)dw_pair(r), (int)dw_pair(wr), (int)a1);
        for (int32_t j = 0; j < (kw - 1) / 2; j++) {
          a1 = (uint32_t)__builtin_arm_smlad((int)dw_pair(r + 2 * (j + 1)), (int)dw_pair(dr + 2 * j), (int)a1);
        }
        if (kw > 1 && !(kw & 1)) {
          a1 = (uint32_t)__builtin_arm_smlabt((int)dw_pair(r + 2 * (kw / 2)), (int)dw_pair(wr + 2 * (kw / 2 - 1)),
                                              (int)a1);
        }
      }
      o[ox * step] = libjit_requant_s8(a0, r4, fast, out_offset, act_min, act_max);
      if (ox + 1 < out_w) {
        o[(ox + 1) * step] = libjit_requant_s8(a1, r4, fast, out_offset, act_min, act_max);
      }
    }
    return;
  }
  /* Stride 2: four outputs a step, output x of the step starting at input word x, so a filter
     row's jw + 3 input words and jw weight words serve 4 jw SMLAD (jw <= 5 here), then one. */
  for (; jw <= 5 && ox + 3 < out_w; ox += 4) {
    const int16_t *wq = *wv;
    uint32_t a0 = b, a1 = b, a2 = b, a3 = b;
    for (int32_t ky = 0; ky < kh; ky++) {
      uint32_t x[8], e[5];
      dw_load(x, rows + ky * plane_w + 2 * ox, jw + 3);
      dw_load(e, wq + ky * 2 * nw, jw);
      a0 = dw_s2(a0, x, e, jw);
      a1 = dw_s2(a1, x + 1, e, jw);
      a2 = dw_s2(a2, x + 2, e, jw);
      a3 = dw_s2(a3, x + 3, e, jw);
    }
    dw_store4(o + ox * step, step, a0, a1, a2, a3, r4, fast, out_offset, act_min, act_max);
  }
  for (; ox < out_w; ox++) {
    uint32_t a0 = b;
    for (int32_t ky = 0; ky < kh; ky++) {
      const int16_t *r = rows + ky * plane_w + 2 * ox, *wr = w + ky * 2 * nw;
      for (int32_t j = 0; j < jw; j++) {
        a0 = (uint32_t)__builtin_arm_smlad((int)dw_pair(r + 2 * j), (int)dw_pair(wr + 2 * j), (int)a0);
      }
    }
    o[ox * step] = libjit_requant_s8(a0, r4, fast, out_offset, act_min, act_max);
  }
}

#endif /* LIBJIT_DWCONV_ROW_S8_H */
