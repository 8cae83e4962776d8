/* libjit_vecmat_csc_f32: out [n] = x [k] . W [k][n] for a constant W whose zeros were dropped at
 * compile time. W is given as compressed sparse columns: the nonzeros of output j are
 * val[e], row[e] for col_start[j] <= e < col_start[j + 1], rows ascending, so the sum runs in
 * the order of the dense kernels with the zero terms left out.
 *
 * Capture never calls this: the all-args build re-lays a pruned weight out for it
 * (specializer/optimize/relayout.py) when the weight is constant and sparse enough to pay. */
#include <stdint.h>

void libjit_vecmat_csc_f32(float *out, const float *x, const float *val, const uint16_t *row,
                           const uint16_t *col_start, int32_t n)
{
  int32_t e = col_start[0];
  for (int32_t j = 0; j < n; j++) {
    const int32_t end = col_start[j + 1];
    float a = 0.0f;
    for (; e < end; e++)
      a += x[row[e]] * val[e];
    out[j] = a;
  }
}
