/* libjit_dwconv_s8 (see libjit_s8.h): int8 depthwise convolution (channel multiplier 1) for
 * weights known at compile time, the all-args build's replacement for CMSIS-NN's depthwise calls
 * (specializer/optimize/relayout_depthwise.py lays out its weights and folds its bias).
 *
 * NHWC depthwise keeps one channel's taps C bytes apart, so CMSIS-NN multiplies one tap per
 * instruction (SMLABB/SMLATT). Here each channel is first copied into a padded int16 plane, where
 * two horizontally adjacent taps are one word and one SMLAD multiplies both (dwconv_row_s8.h: the
 * weight layout and the steps). The plane's padding holds the input zero point and the bias has
 * input_offset * (sum of the channel's weights) folded in, so no offset is added per tap and no tap
 * is tested against the input's edges: the sum is CMSIS-NN's exactly (int32, no overflow for int8 x
 * int8 over a window).
 */

#include "dwconv_row_s8.h"

int32_t libjit_dwconv_s8(int8_t *out, const int8_t *in, const int16_t *w, const int32_t *rq, int16_t *plane,
                         int32_t in_h, int32_t in_w, int32_t ch, int32_t kh, int32_t kw, int32_t stride_h,
                         int32_t stride_w, int32_t pad_top, int32_t pad_left, int32_t out_h, int32_t out_w,
                         int32_t plane_h, int32_t plane_w, int32_t pad_value, int32_t fast, int32_t out_offset,
                         int32_t act_min, int32_t act_max)
{
  const int32_t wch = kh * 2 * dw_row_words(kw, stride_w); /* int16 weights per channel */
  const int16_t *volatile wv;
  for (int32_t i = 0; i < plane_h * plane_w; i++) {
    plane[i] = (int16_t)pad_value;
  }
  for (int32_t c = 0; c < ch; c++) {
    dw_copy_channel(plane, in, c, ch, in_h, in_w, pad_top, pad_left, plane_w);
    const int16_t *wc = w + c * wch;
    wv = wc;
    for (int32_t oy = 0; oy < out_h; oy++) {
      dw_row(out + oy * out_w * ch + c, ch, plane + oy * stride_h * plane_w, plane_w, wc, &wv, rq + 4 * c, kh, kw,
             stride_w, out_w, fast, out_offset, act_min, act_max);
    }
  }
  return 0; /* CMSIS-NN's ARM_CMSIS_NN_SUCCESS: the call it replaces returns a status */
}
