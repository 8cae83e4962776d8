/* libjit_conv_s8 (see libjit_s8.h): int8 convolution for weights known at compile time, the
 * all-args build's replacement for CMSIS-NN's conv calls (specializer/optimize/relayout_conv.py
 * lays out its weights and folds its bias).
 *
 * Three output pixels (two for a layer of two, one for a dense layer at batch 1) by two output
 * channels at a time, four taps per step (one pixel: four output channels). The
 * pixels' taps are widened to int16 once (SXTB16: bytes 0/2,
 * then 1/3 of each group of four) into `cols`, and the weights are stored widened in the same
 * order, so a step for every pair of output channels is, per half (taps 0/2, then 1/3), 3 + 2
 * loads in a row and 6 SMLAD for 12 multiply-adds: 13 registers live, no spill (CMSIS-NN's
 * arm_nn_mat_mult_nt_t_s8 does two pixels and widens both sides in the loop: 8 SXTB16 more per
 * 16). The input offset is folded into the bias; for any filter other than 1x1 without padding
 * the pixels' windows are first gathered (int8, the input zero point in the padding) at the
 * start of `cols`, so no tap is tested or offset -- or, three pixels at a time with input
 * channels a multiple of 4, widened straight from the input (widen_window: no int8 copy).
 *
 * Weights per pair of output channels (o, o+1; a missing o+1 is zeros), per group of four taps
 * g: int16 (w[o][4g], w[o][4g+2]), (w[o][4g+1], w[o][4g+3]), then the same for o+1; then the
 * k % 4 last taps as (w[o][k], w[o+1][k]) pairs. Narrow (less flash): int8, per group the word
 * (w[o][4g], w[o+1][4g], w[o][4g+2], w[o+1][4g+2]), whose SXTB16 is o's pair and rotated by 8
 * o+1's, then the same of taps 1/3; the tail as before; each pair's panel padded to whole words.
 * For one pixel, panels of four output channels (a missing one zeros), int16 or int8: two pairs'
 * panels taken a group of each in turn, then the first pair's tail, then the second's.
 * Packed (narrow == PACKED, one pixel or three): int8 panels whose group words hold per tap
 * (w[o+1] + 128, w[o]) as bytes, so the word read as two int16 is 256 w[o] + w[o+1] + 128: one
 * SMLAD with it and one with it ANDed with 0x00ff00ff, and o's sum is the difference shifted
 * right by 8, o+1's the second less 128 times the pixel's sum of taps (relayout_conv._packed;
 * exact where the compiler proved |o's sum| < 2^23). One AND a weight word instead of two SXTB16.
 */
#include <string.h>

/* No machine scheduler here (see matmul_f32.c): a step's four input loads, then its four weight
 * loads, issue back to back as written, so all but the first of each four pipeline (1 cycle
 * instead of 2). Pushed before the headers, so their inline helpers carry the same features. */
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("no-use-misched,disable-postra-scheduler"))), \
                             apply_to = function)
#endif

#include "libjit_s8.h"

#include "requant_s8.h"

enum { PACKED = 2 }; /* `narrow`: int8 panels in the packed form (see the top) */

/* The widened columns' address through a volatile copy: opaque to the optimizer, so what was
   stored there is loaded again, not kept in registers from the stores (see triples). */
static inline const uint32_t *opaque_cols(const uint32_t *wide)
{
  const uint32_t *volatile opaque = wide;
  return opaque;
}

static inline uint32_t word(const void *p)
{
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* The k taps of output pixel (oy, ox) in the filter's [kh][kw][in_c] order, padding pad_value. */
static inline void gather(int8_t *col, const int8_t *in, int32_t oy, int32_t ox, int32_t in_h, int32_t in_w,
                          int32_t in_c, int32_t kh, int32_t kw, int32_t stride_h, int32_t stride_w, int32_t pad_top,
                          int32_t pad_left, int32_t dil_h, int32_t dil_w, int32_t pad_value)
{
  for (int32_t ky = 0; ky < kh; ky++) {
    const int32_t iy = oy * stride_h - pad_top + ky * dil_h;
    for (int32_t kx = 0; kx < kw; kx++) {
      const int32_t ix = ox * stride_w - pad_left + kx * dil_w;
      int8_t *dst = col + (ky * kw + kx) * in_c;
      if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) {
        memset(dst, pad_value, (size_t)in_c);
      } else {
        memcpy(dst, in + (iy * in_w + ix) * in_c, (size_t)in_c);
      }
    }
  }
}

/* in_c bytes from s widened into every third pair of words of d (the triples' layout: a
 * group's pixel 0, 1, 2), four words loaded back to back before their stores (a load after a
 * store does not pipeline). */
static inline void widen_tap(uint32_t *d, const int8_t *s, int32_t in_c)
{
  for (int32_t m = 0; m < in_c / 4; m += 4) {
    uint32_t u[4];
    const int32_t n = in_c / 4 - m < 4 ? in_c / 4 - m : 4;
    for (int32_t j = 0; j < n; j++) {
      u[j] = word(s + 4 * (m + j));
    }
    for (int32_t j = 0; j < n; j++) {
      d[6 * (m + j)] = (uint32_t)__builtin_arm_sxtb16((int)u[j]);
      d[6 * (m + j) + 1] = (uint32_t)__builtin_arm_sxtb16((int)((u[j] >> 8) | (u[j] << 24)));
    }
  }
}

/* Output pixel (oy, ox)'s taps widened into every third pair of words of `dst`, in_c a multiple
 * of 4: each filter tap's channels straight from the input, a padding tap's from `pad`. A window
 * wholly inside the input (most of them) is read at offsets from one pointer with no test per
 * tap. */
static inline void widen_window(uint32_t *dst, const int8_t *in, const int8_t *pad, int32_t oy, int32_t ox,
                                int32_t in_h, int32_t in_w, int32_t in_c, int32_t kh, int32_t kw, int32_t stride_h,
                                int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dil_h, int32_t dil_w)
{
  const int32_t iy = oy * stride_h - pad_top, ix = ox * stride_w - pad_left, per_tap = in_c / 4;
  if (iy >= 0 && iy + (kh - 1) * dil_h < in_h && ix >= 0 && ix + (kw - 1) * dil_w < in_w) {
    const int8_t *src = in + (iy * in_w + ix) * in_c;
    for (int32_t ky = 0; ky < kh; ky++) {
      for (int32_t kx = 0; kx < kw; kx++) {
        widen_tap(dst + 6 * (ky * kw + kx) * per_tap, src + (ky * dil_h * in_w + kx * dil_w) * in_c, in_c);
      }
    }
    return;
  }
  for (int32_t ky = 0; ky < kh; ky++) {
    const int32_t y = iy + ky * dil_h;
    for (int32_t kx = 0; kx < kw; kx++) {
      const int32_t x = ix + kx * dil_w;
      widen_tap(dst + 6 * (ky * kw + kx) * per_tap,
                y < 0 || y >= in_h || x < 0 || x >= in_w ? pad : in + (y * in_w + x) * in_c, in_c);
    }
  }
}

/* Every output pixel, three at a time (see the top). The widened columns
 * per group: pixel 0's taps 0/2 and 1/3, then pixel 1's, then pixel 2's. int8 panels (narrow):
 * per half, the pair's two words are loaded again with the pixels' three and widened (SXTB16,
 * rotated by 8 for taps 1/3), so 13 registers still do. */
static inline void triples(int8_t *out, const int8_t *in, const void *w, const int32_t *rq, int8_t *cols,
                           uint32_t *wide, const int16_t *index, int32_t in_h, int32_t in_w, int32_t in_c,
                           int32_t out_c, int32_t live_c, int32_t kh,
                           int32_t kw, int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left,
                           int32_t dil_h, int32_t dil_w, int32_t out_w, int32_t pixels, int32_t pad_value,
                           int32_t direct, int32_t narrow, int32_t fast, int32_t out_offset, int32_t act_min,
                           int32_t act_max)
{
  const int32_t k = kh * kw * in_c, groups = k / 4, tail = k % 4;
  /* Read through a volatile copy, the widened columns' address is opaque to the optimizer, so
     they are loaded per pair of output channels, not hoisted out of that loop into more
     registers than there are (spilled, then reloaded one before each SMLAD: no two loads
     pipelined). */
  uint32_t *volatile opaque_wide = wide;
  /* Whole groups per filter tap (in_c a multiple of 4): each tap's channels are widened straight
     from the input, a padding tap's from `pad` (in_c bytes of the zero point at the start of
     cols), with no int8 copy of the windows first. */
  const int32_t by_tap = !direct && in_c % 4 == 0;
  const int8_t *pad = cols;
  if (by_tap) {
    memset(cols, pad_value, (size_t)in_c);
  }
  for (int32_t p = 0; p < pixels; p += 3) {
    /* a last one or two pixels: the last computed again in the missing places and stored again,
       the same bytes (so no second loop's code is needed for them) */
    int32_t at[3];
    const int8_t *x[3];
    for (int32_t i = 0; i < 3; i++) {
      at[i] = p + i < pixels ? p + i : pixels - 1;
      const int32_t y = at[i] / out_w, z = at[i] % out_w;
      if (direct) {
        x[i] = in + (y * stride_h * in_w + z * stride_w) * in_c;
      } else if (!by_tap) {
        gather(cols + i * k, in, y, z, in_h, in_w, in_c, kh, kw, stride_h, stride_w, pad_top, pad_left, dil_h, dil_w,
               pad_value);
        x[i] = cols + i * k;
      } else {
        x[i] = pad; /* no tail to read: k is whole groups */
      }
    }
    if (by_tap) {
      for (int32_t i = 0; i < 3; i++) {
        widen_window(wide + 2 * i, in, pad, at[i] / out_w, at[i] % out_w, in_h, in_w, in_c, kh, kw, stride_h,
                     stride_w, pad_top, pad_left, dil_h, dil_w);
      }
    } else {
      for (int32_t g = 0; g < groups; g++) {
        for (int32_t i = 0; i < 3; i++) {
          const uint32_t u = word(x[i] + 4 * g);
          wide[6 * g + 2 * i] = (uint32_t)__builtin_arm_sxtb16((int)u);
          wide[6 * g + 2 * i + 1] = (uint32_t)__builtin_arm_sxtb16((int)((u >> 8) | (u << 24)));
        }
      }
    }
    /* the packed form's offsets per pixel, as for one pixel but from the words just stored (LLVM
       keeps some in registers: ResNet-8 0.8% faster than reading them back through opaque_cols,
       its frame 64 bytes larger; no 64-group layer to spill here) */
    uint32_t x128[3] = {0, 0, 0};
    if (narrow == PACKED) {
      for (int32_t g = 0; g < groups; g++) {
        for (int32_t i = 0; i < 3; i++) {
          x128[i] = (uint32_t)__builtin_arm_smlad((int)wide[6 * g + 2 * i], 0x00800080, (int)x128[i]);
          x128[i] = (uint32_t)__builtin_arm_smlad((int)wide[6 * g + 2 * i + 1], 0x00800080, (int)x128[i]);
        }
      }
    }
    int8_t *o0 = out + at[0] * out_c, *o1 = out + at[1] * out_c, *o2 = out + at[2] * out_c;
    const int16_t *wp = (const int16_t *)w;
    const int8_t *wn = (const int8_t *)w;
    for (int32_t o = 0; o < live_c; o += 2) {
      const int32_t j = o + 1 < live_c ? o + 1 : o;
      const int32_t *r0 = rq + 4 * o, *r1 = rq + 4 * j;
      /* int16 panels: the sums start from 0 and take the biases after the taps (as in quads);
         loaded before them, o's whole record came with its bias and was spilled across the
         unrolled taps (kernel rows 3x3 1.23 -> 1.21 est. cycles/MAC, 1x1 1.54 -> 1.53, ResNet-8 -0.6%).
         int8 panels keep them first (the packed form: every sum from o+1's bias, o's taken after
         the loop): started from 0 the packed loop spilled (ResNet-8's 64-channel 3x3 conv +7.6%) */
      const uint32_t b0 = narrow == PACKED ? (uint32_t)r1[0] : narrow ? (uint32_t)r0[0] : 0;
      const uint32_t b1 = narrow ? (uint32_t)r1[0] : 0;
      uint32_t a00 = b0, a01 = b1, a10 = b0, a11 = b1, a20 = b0, a21 = b1;
      const uint32_t *xw = opaque_wide;
      for (int32_t g = 0; g < groups; g++) {
        for (int32_t h = 0; h < 2; h++) { /* taps 0/2, then 1/3: five loads in a row, six SMLAD */
          const uint32_t u = xw[h], v = xw[2 + h], t = xw[4 + h];
          uint32_t wa, wc;
          if (narrow == PACKED) { /* the half's word, as is for o's high bytes, ANDed for o+1's sum */
            wa = word(wn + 4 * h);
            wc = wa & 0x00ff00ffu;
          } else if (narrow) { /* the half's word: (o, o+1) taps 0 then 2, or 1 then 3 */
            const uint32_t m = word(wn + 4 * h);
            wa = (uint32_t)__builtin_arm_sxtb16((int)m);
            wc = (uint32_t)__builtin_arm_sxtb16((int)((m >> 8) | (m << 24)));
          } else {
            wa = word(wp + 2 * h);
            wc = word(wp + 4 + 2 * h);
          }
          a00 = (uint32_t)__builtin_arm_smlad((int)u, (int)wa, (int)a00);
          a10 = (uint32_t)__builtin_arm_smlad((int)v, (int)wa, (int)a10);
          a20 = (uint32_t)__builtin_arm_smlad((int)t, (int)wa, (int)a20);
          a01 = (uint32_t)__builtin_arm_smlad((int)u, (int)wc, (int)a01);
          a11 = (uint32_t)__builtin_arm_smlad((int)v, (int)wc, (int)a11);
          a21 = (uint32_t)__builtin_arm_smlad((int)t, (int)wc, (int)a21);
        }
        xw += 6;
        wp += 8;
        wn += 8;
      }
      if (narrow == PACKED) { /* o's sum from the high bytes, then its bias; o+1's less the offset */
        a00 = (uint32_t)r0[0] + (uint32_t)((int32_t)(a00 - a01) >> 8);
        a10 = (uint32_t)r0[0] + (uint32_t)((int32_t)(a10 - a11) >> 8);
        a20 = (uint32_t)r0[0] + (uint32_t)((int32_t)(a20 - a21) >> 8);
        a01 -= x128[0];
        a11 -= x128[1];
        a21 -= x128[2];
      } else if (!narrow) {
        a00 += (uint32_t)r0[0];
        a10 += (uint32_t)r0[0];
        a20 += (uint32_t)r0[0];
        a01 += (uint32_t)r1[0];
        a11 += (uint32_t)r1[0];
        a21 += (uint32_t)r1[0];
      }
      for (int32_t t = 0; t < tail; t++) {
        const int32_t wo0 = narrow ? wn[0] : wp[0], wo1 = narrow ? wn[1] : wp[1];
        wp += 2;
        wn += 2;
        a00 += (uint32_t)(x[0][4 * groups + t] * wo0);
        a10 += (uint32_t)(x[1][4 * groups + t] * wo0);
        a20 += (uint32_t)(x[2][4 * groups + t] * wo0);
        a01 += (uint32_t)(x[0][4 * groups + t] * wo1);
        a11 += (uint32_t)(x[1][4 * groups + t] * wo1);
        a21 += (uint32_t)(x[2][4 * groups + t] * wo1);
      }
      wn += (4 - 2 * tail % 4) % 4; /* each pair's int8 panel is whole words */
      if (narrow && fast) { /* as in the pair loop */
        a00 <<= 1;
        a01 <<= 1;
        a10 <<= 1;
        a11 <<= 1;
        a20 <<= 1;
        a21 <<= 1;
      }
      /* Stored without a condition (an odd last channel's zero partner goes to its slot first,
         then the channel over it): under `if (o + 1 < live_c)` LLVM sinks the partner's SMLADs
         into the branch, after the channel's, and spills every column in between. */
      const int32_t at0 = index ? index[o] : o, at1 = index ? index[j] : j;
      o0[at1] = libjit_requant_s8(a01, r1, fast, out_offset, act_min, act_max);
      o1[at1] = libjit_requant_s8(a11, r1, fast, out_offset, act_min, act_max);
      o2[at1] = libjit_requant_s8(a21, r1, fast, out_offset, act_min, act_max);
      o0[at0] = libjit_requant_s8(a00, r0, fast, out_offset, act_min, act_max);
      o1[at0] = libjit_requant_s8(a10, r0, fast, out_offset, act_min, act_max);
      o2[at0] = libjit_requant_s8(a20, r0, fast, out_offset, act_min, act_max);
    }
  }
}

/* A dense layer at batch 1 (one output pixel): no second pixel shares a weight load, so four
 * output channels share the input's instead. `wide` holds the pixel's taps 0/2 and 1/3 per group
 * (two words a group), t its k % 4 last taps. Per group, with int16 panels: two input loads, then
 * per pair of the four four loads in a row and four SMLAD, about 1.25 est. cycles per MAC (a pair
 * at a time: 1.5). With packed int8 panels (see the top): per group the two input words and the
 * four's four weight words loaded in a row, then per pair two AND (UXTB16) and four SMLAD (the
 * kernel row dense_int8: 1.44 est. cycles per MAC in all; 1.49 while each pair's two words were
 * loaded on their own, two loads a run, not six); int8
 * panels widened by SXTB16, where the packed form's bound fails, take two SXTB16 a word (about 2).
 * A last quad of fewer channels computes the last one again in the missing places; the four are
 * stored last to first, so a channel's own value is stored last. */
static inline void quads(int8_t *out, uint32_t *wide, const int8_t *t, const void *w, const int32_t *rq,
                         const int16_t *index, int32_t live_c, int32_t groups, int32_t tail, int32_t narrow,
                         uint32_t x128, int32_t fast, int32_t out_offset, int32_t act_min, int32_t act_max)
{
  uint32_t *volatile opaque_wide = wide; /* as in triples */
  const int16_t *wp = (const int16_t *)w;
  const int8_t *wn = (const int8_t *)w;
  for (int32_t o = 0; o < live_c; o += 4) {
    /* the sums start from 0 and take the bias last: the four records' addresses are not worked
       out before the loop, where they would take registers it needs (spilled and reloaded) */
    uint32_t a[4] = {0, 0, 0, 0};
    const uint32_t *xw = opaque_wide;
    if (narrow == PACKED) {
      for (int32_t g = 0; g < groups; g++) { /* six loads in a row: the inputs, both pairs' words */
        const uint32_t u02 = xw[0], u13 = xw[1];
        const uint32_t m[4] = {word(wn), word(wn + 4), word(wn + 8), word(wn + 12)};
        xw += 2;
        wn += 16;
        for (int32_t p = 0; p < 4; p += 2) {
          a[p] = (uint32_t)__builtin_arm_smlad((int)u02, (int)m[p], (int)a[p]);
          a[p + 1] = (uint32_t)__builtin_arm_smlad((int)u02, (int)(m[p] & 0x00ff00ffu), (int)a[p + 1]);
          a[p] = (uint32_t)__builtin_arm_smlad((int)u13, (int)m[p + 1], (int)a[p]);
          a[p + 1] = (uint32_t)__builtin_arm_smlad((int)u13, (int)(m[p + 1] & 0x00ff00ffu), (int)a[p + 1]);
        }
      }
      for (int32_t p = 0; p < 4; p += 2) { /* o's sum from the high bytes, o+1's less its offset's */
        a[p] = (uint32_t)((int32_t)(a[p] - a[p + 1]) >> 8);
        a[p + 1] -= x128;
      }
    } else if (narrow) {
      for (int32_t g = 0; g < groups; g++) { /* per pair: its word of taps 0/2, then of 1/3 */
        const uint32_t u02 = xw[0], u13 = xw[1];
        xw += 2;
        for (int32_t p = 0; p < 4; p += 2) {
          const uint32_t m02 = word(wn), m13 = word(wn + 4);
          wn += 8;
          a[p] = (uint32_t)__builtin_arm_smlad((int)u02, __builtin_arm_sxtb16((int)m02), (int)a[p]);
          a[p + 1] = (uint32_t)__builtin_arm_smlad(
              (int)u02, __builtin_arm_sxtb16((int)((m02 >> 8) | (m02 << 24))), (int)a[p + 1]);
          a[p] = (uint32_t)__builtin_arm_smlad((int)u13, __builtin_arm_sxtb16((int)m13), (int)a[p]);
          a[p + 1] = (uint32_t)__builtin_arm_smlad(
              (int)u13, __builtin_arm_sxtb16((int)((m13 >> 8) | (m13 << 24))), (int)a[p + 1]);
        }
      }
    } else {
      for (int32_t g = 0; g < groups; g++) {
        const uint32_t u02 = xw[0], u13 = xw[1];
        xw += 2;
        for (int32_t p = 0; p < 4; p += 2) { /* channels o + p and o + p + 1 */
          const uint32_t wa = word(wp), wb = word(wp + 2), wc = word(wp + 4), wd = word(wp + 6);
          wp += 8;
          a[p] = (uint32_t)__builtin_arm_smlad((int)u02, (int)wa, (int)a[p]);
          a[p] = (uint32_t)__builtin_arm_smlad((int)u13, (int)wb, (int)a[p]);
          a[p + 1] = (uint32_t)__builtin_arm_smlad((int)u02, (int)wc, (int)a[p + 1]);
          a[p + 1] = (uint32_t)__builtin_arm_smlad((int)u13, (int)wd, (int)a[p + 1]);
        }
      }
    }
    for (int32_t p = 0; p < 4; p += 2) { /* each pair's last taps (an int8 pair's padded to a word) */
      for (int32_t i = 0; i < tail; i++) {
        a[p] += (uint32_t)(t[i] * (narrow ? wn[2 * i] : wp[0]));
        a[p + 1] += (uint32_t)(t[i] * (narrow ? wn[2 * i + 1] : wp[1]));
        wp += 2;
      }
      wn += (2 * tail + 3) / 4 * 4;
    }
    for (int32_t i = 3; i >= 0; i--) {
      const int32_t j = o + i < live_c ? o + i : live_c - 1;
      const uint32_t acc = a[i] + (uint32_t)rq[4 * j];
      /* int8 panels cannot hold the doubled weights the fast form takes: the sum doubled here */
      out[index ? index[j] : j] = libjit_requant_s8(narrow && fast ? acc << 1 : acc, rq + 4 * j, fast, out_offset,
                                                    act_min, act_max);
    }
  }
}

int32_t libjit_conv_s8(int8_t *out, const int8_t *in, const void *w, const int32_t *rq, int8_t *cols,
                       const int16_t *index, const int8_t *fill, int32_t in_h, int32_t in_w, int32_t in_c,
                       int32_t out_c, int32_t live_c, int32_t kh, int32_t kw,
                       int32_t stride_h, int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t dil_h,
                       int32_t dil_w, int32_t out_h, int32_t out_w, int32_t pad_value, int32_t fast,
                       int32_t narrow, int32_t out_offset, int32_t act_min, int32_t act_max)
{
  const int32_t k = kh * kw * in_c, groups = k / 4, tail = k % 4;
  const int32_t direct = kh == 1 && kw == 1 && pad_top == 0 && pad_left == 0;
  const int32_t pixels = out_h * out_w;
  const int32_t single = pixels == 1; /* a dense layer at batch 1: one pixel, no partner */
  if (fill) { /* the channels whose value no input changes, then the others computed over them */
    for (int32_t p = 0; p < pixels; p++) {
      memcpy(out + p * out_c, fill, (size_t)out_c);
    }
    if (live_c == 0) {
      return 0;
    }
  }
  /* cols: [the gathered windows (three when triples run, one for quads, else two), their bytes
     rounded up to a word, unless direct][per group: each pixel's taps 0/2 and 1/3 as int16 pairs] */
  const int32_t three = groups > 0 && pixels >= 3;
  const int32_t windows = three ? 3 : single ? 1 : 2;
  uint32_t *wide = (uint32_t *)(cols + (direct ? 0 : (windows * k + 3) / 4 * 4));
  if (single) {
    const int8_t *x = in;
    if (!direct) {
      gather(cols, in, 0, 0, in_h, in_w, in_c, kh, kw, stride_h, stride_w, pad_top, pad_left, dil_h, dil_w,
             pad_value);
      x = cols;
    }
    for (int32_t g = 0; g < groups; g++) {
      const uint32_t u = word(x + 4 * g);
      wide[2 * g] = (uint32_t)__builtin_arm_sxtb16((int)u);
      wide[2 * g + 1] = (uint32_t)__builtin_arm_sxtb16((int)((u >> 8) | (u << 24)));
    }
    /* 128 times the sum of the groups' taps: the packed form's offset, read back through an opaque
       pointer four words a pass (summed as they were widened, every widened word was kept live,
       and 64 groups of VWW's last layer spilled into a 520-byte frame) */
    uint32_t x128 = 0;
    if (narrow == PACKED) {
      const uint32_t *xs = opaque_cols(wide);
#pragma clang loop unroll_count(4)
      for (int32_t g = 0; g < 2 * groups; g++) {
        x128 = (uint32_t)__builtin_arm_smlad((int)xs[g], 0x00800080, (int)x128);
      }
    }
    quads(out, wide, x + 4 * groups, w, rq, index, live_c, groups, tail, narrow, x128, fast, out_offset, act_min,
          act_max);
    return 0;
  }
  if (three) {
    triples(out, in, w, rq, cols, wide, index, in_h, in_w, in_c, out_c, live_c, kh, kw, stride_h, stride_w, pad_top,
            pad_left, dil_h, dil_w, out_w, pixels, pad_value, direct, narrow, fast, out_offset, act_min, act_max);
    return 0;
  }
  /* Two pixels at a time: a layer of two, or of taps fewer than a group */
  uint32_t *volatile opaque_wide = wide; /* as in triples */
  for (int32_t p = 0; p < pixels; p += 2) {
    const int32_t q = p + 1 < pixels ? p + 1 : p; /* an odd last pixel: computed twice, stored once */
    const int8_t *x0, *x1;
    if (direct) {
      x0 = in + ((p / out_w) * stride_h * in_w + (p % out_w) * stride_w) * in_c;
      x1 = in + ((q / out_w) * stride_h * in_w + (q % out_w) * stride_w) * in_c;
    } else {
      gather(cols, in, p / out_w, p % out_w, in_h, in_w, in_c, kh, kw, stride_h, stride_w, pad_top, pad_left, dil_h,
             dil_w, pad_value);
      gather(cols + k, in, q / out_w, q % out_w, in_h, in_w, in_c, kh, kw, stride_h, stride_w, pad_top, pad_left,
             dil_h, dil_w, pad_value);
      x0 = cols;
      x1 = cols + k;
    }
    for (int32_t g = 0; g < groups; g++) {
      const uint32_t u = word(x0 + 4 * g), v = word(x1 + 4 * g);
      wide[4 * g] = (uint32_t)__builtin_arm_sxtb16((int)u);
      wide[4 * g + 1] = (uint32_t)__builtin_arm_sxtb16((int)((u >> 8) | (u << 24)));
      wide[4 * g + 2] = (uint32_t)__builtin_arm_sxtb16((int)v);
      wide[4 * g + 3] = (uint32_t)__builtin_arm_sxtb16((int)((v >> 8) | (v << 24)));
    }
    const int8_t *t0 = x0 + 4 * groups, *t1 = x1 + 4 * groups;
    int8_t *o0 = out + p * out_c, *o1 = out + q * out_c;
    const int16_t *wp = (const int16_t *)w;
    const int8_t *wn = (const int8_t *)w;
    for (int32_t o = 0; o < live_c; o += 2) {
      const int32_t j = o + 1 < live_c ? o + 1 : o;
      const int32_t *r0 = rq + 4 * o, *r1 = rq + 4 * j;
      uint32_t a00 = (uint32_t)r0[0], a01 = (uint32_t)r1[0], a10 = a00, a11 = a01;
      const uint32_t *xw = opaque_wide;
      for (int32_t g = 0; g < groups; g++) {
        const uint32_t u02 = xw[0], u13 = xw[1], v02 = xw[2], v13 = xw[3];
        xw += 4;
        if (narrow) { /* int8 words (o, o+1) of taps 0/2, then 1/3: widened here, as the input was */
          for (int32_t h = 0; h < 2; h++) { /* each half as soon as its word is widened */
            const uint32_t m = word(wn + 4 * h), u = h ? u13 : u02, v = h ? v13 : v02;
            const uint32_t wa = (uint32_t)__builtin_arm_sxtb16((int)m);
            const uint32_t wc = (uint32_t)__builtin_arm_sxtb16((int)((m >> 8) | (m << 24)));
            a00 = (uint32_t)__builtin_arm_smlad((int)u, (int)wa, (int)a00);
            a01 = (uint32_t)__builtin_arm_smlad((int)u, (int)wc, (int)a01);
            a10 = (uint32_t)__builtin_arm_smlad((int)v, (int)wa, (int)a10);
            a11 = (uint32_t)__builtin_arm_smlad((int)v, (int)wc, (int)a11);
          }
          wn += 8;
        } else { /* six loads in a row, then two: at most 12 registers live */
          const uint32_t wa = word(wp), wb = word(wp + 2);
          a00 = (uint32_t)__builtin_arm_smlad((int)u02, (int)wa, (int)a00);
          a00 = (uint32_t)__builtin_arm_smlad((int)u13, (int)wb, (int)a00);
          a10 = (uint32_t)__builtin_arm_smlad((int)v02, (int)wa, (int)a10);
          a10 = (uint32_t)__builtin_arm_smlad((int)v13, (int)wb, (int)a10);
          const uint32_t wc = word(wp + 4), wd = word(wp + 6);
          wp += 8;
          a01 = (uint32_t)__builtin_arm_smlad((int)u02, (int)wc, (int)a01);
          a01 = (uint32_t)__builtin_arm_smlad((int)u13, (int)wd, (int)a01);
          a11 = (uint32_t)__builtin_arm_smlad((int)v02, (int)wc, (int)a11);
          a11 = (uint32_t)__builtin_arm_smlad((int)v13, (int)wd, (int)a11);
        }
      }
      for (int32_t t = 0; t < tail; t++) {
        const int32_t xu = t0[t], xv = t1[t];
        const int32_t wo0 = narrow ? wn[0] : wp[0], wo1 = narrow ? wn[1] : wp[1];
        wn += 2;
        wp += 2;
        a00 += (uint32_t)(xu * wo0);
        a10 += (uint32_t)(xv * wo0);
        a01 += (uint32_t)(xu * wo1);
        a11 += (uint32_t)(xv * wo1);
      }
      wn += (4 - 2 * tail % 4) % 4; /* each pair's int8 panel is whole words */
      if (narrow && fast) { /* the fast form takes the doubled sum: int8 weights cannot hold 2w */
        a00 <<= 1;
        a01 <<= 1;
        a10 <<= 1;
        a11 <<= 1;
      }
      /* as in triples: no condition on the partner; and pixel 0 last (a lone pixel is pixel 1 too) */
      const int32_t at0 = index ? index[o] : o, at1 = index ? index[j] : j;
      o1[at1] = libjit_requant_s8(a11, r1, fast, out_offset, act_min, act_max);
      o1[at0] = libjit_requant_s8(a10, r0, fast, out_offset, act_min, act_max);
      o0[at1] = libjit_requant_s8(a01, r1, fast, out_offset, act_min, act_max);
      o0[at0] = libjit_requant_s8(a00, r0, fast, out_offset, act_min, act_max);
    }
  }
  return 0; /* CMSIS-NN's ARM_CMSIS_NN_SUCCESS: the call it replaces returns a status */
}

#ifdef __clang__
#pragma clang attribute pop
#endif
