/* libjit_dwconv_mult_s8 (see libjit_s8.h): libjit_dwconv_s8 with a channel multiplier. Output
 * channel c * mult + m reads input channel c: one copy of the input channel into the int16 plane
 * serves its mult outputs, each computed as dwconv_s8.c computes a channel (dwconv_row_s8.h;
 * weights and requantization records per output channel).
 */

#include "dwconv_row_s8.h"

int32_t libjit_dwconv_mult_s8(int8_t *out, const int8_t *in, const int16_t *w, const int32_t *rq, int16_t *plane,
                              int32_t in_h, int32_t in_w, int32_t ch, int32_t kh, int32_t kw, int32_t stride_h,
                              int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t out_h, int32_t out_w,
                              int32_t plane_h, int32_t plane_w, int32_t pad_value, int32_t fast,
                              int32_t out_offset, int32_t act_min, int32_t act_max, int32_t mult)
{
  const int32_t wch = kh * 2 * dw_row_words(kw, stride_w), out_ch = ch * mult;
  const int16_t *volatile wv;
  for (int32_t i = 0; i < plane_h * plane_w; i++) {
    plane[i] = (int16_t)pad_value;
  }
  for (int32_t c = 0; c < ch; c++) {
    dw_copy_channel(plane, in, c, ch, in_h, in_w, pad_top, pad_left, plane_w);
    /* one copy of the input channel serves its mult output channels */
    for (int32_t oc = c * mult; oc < (c + 1) * mult; oc++) {
      const int16_t *wc = w + oc * wch;
      wv = wc;
      for (int32_t oy = 0; oy < out_h; oy++) {
        dw_row(out + oy * out_w * out_ch + oc, out_ch, plane + oy * stride_h * plane_w, plane_w, wc, &wv,
               rq + 4 * oc, kh, kw, stride_w, out_w, fast, out_offset, act_min, act_max);
      }
    }
  }
  return 0;
}
