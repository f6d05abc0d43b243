// im2col for one image's group of a conv2d: the matrix whose GEMM with the
// weights is the convolution ("gemm", core/ops/conv2d/gemm.cc), and whose
// GEMM with the output gradient is the weight gradient (backward/weight).
// Both loops spread over OpenMP threads; call them outside a parallel
// region.
//
// In an unnamed namespace like conv2d_ranges.h, whose ValidRange they use.
#ifndef AI3_CORE_OPS_CONV2D_CONV2D_IM2COL_H_
#define AI3_CORE_OPS_CONV2D_CONV2D_IM2COL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/ops/conv2d/conv2d.h"
#include "core/ops/conv2d/conv2d_ranges.h"

namespace ai3 {
namespace {

// col[(c*kh + r)*kw + s][oh*OW + ow] for one image's group (xg: its cg
// channel planes).
template <typename T>
void Im2colNchw(const Conv2dGeometry& g, const T* xg, T* col) {
  const int64_t pixels = g.oh * g.ow;
  const int64_t rows = g.cg * g.kh * g.kw;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t s = row % g.kw;
    const int64_t r = (row / g.kw) % g.kh;
    const int64_t c = row / (g.kw * g.kh);
    const T* xc = xg + c * g.h * g.w;
    T* dst = col + row * pixels;
    int64_t lo, hi;
    ValidRange(s * g.dw - g.pw, g.sw, g.w, g.ow, &lo, &hi);
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      T* d = dst + oh * g.ow;
      const int64_t ih = oh * g.sh - g.ph + r * g.dh;
      if (ih < 0 || ih >= g.h) {
        std::fill(d, d + g.ow, T(0));
        continue;
      }
      // Input column of output column ow: ow*sw + s*dw - pw.
      const T* src = xc + ih * g.w;
      const int64_t shift = s * g.dw - g.pw;
      std::fill(d, d + lo, T(0));
      if (g.sw == 1) {
        for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[ow + shift];
      } else {
        for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[ow * g.sw + shift];
      }
      std::fill(d + hi, d + g.ow, T(0));
    }
  }
}

// col[oh*OW + ow][(r*kw + s)*cg + c] for one image; xg points at the
// group's first channel of pixel (0, 0).
template <typename T>
void Im2colNhwc(const Conv2dGeometry& g, const T* xg, T* col) {
  const int64_t depth = g.kh * g.kw * g.cg;
#pragma omp parallel for schedule(static)
  for (int64_t oh = 0; oh < g.oh; ++oh) {
    for (int64_t ow = 0; ow < g.ow; ++ow) {
      T* d = col + (oh * g.ow + ow) * depth;
      for (int64_t r = 0; r < g.kh; ++r) {
        const int64_t ih = oh * g.sh - g.ph + r * g.dh;
        for (int64_t s = 0; s < g.kw; ++s, d += g.cg) {
          const int64_t iw = ow * g.sw - g.pw + s * g.dw;
          if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) {
            std::fill(d, d + g.cg, T(0));
          } else {
            std::memcpy(d, xg + (ih * g.w + iw) * g.c,
                        static_cast<size_t>(g.cg) * sizeof(T));
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_CONV2D_IM2COL_H_
