// maxpool2d "direct": each output is the max over its window's in-bounds taps
// (padding never wins, as in PyTorch; a window with no in-bounds tap, possible
// only with dilation, gives -inf). NaN propagates. NCHW runs one thread per
// (n, c) plane, a row of outputs per tap; NHWC runs threads over (n, output
// row) with the channels in vector lanes, kept in registers over the window
// (ReduceTapsNhwc).
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/ops/pool2d/pool2d.h"
#include "core/ops/pool2d/pool2d_direct.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Output columns [lo, hi) whose tap at input column ow*stride + offset is
// in [0, size).
inline void OutputColumns(int64_t offset, int64_t stride, int64_t size,
                          int64_t count, int64_t* lo, int64_t* hi) {
  *lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  *hi = size - 1 - offset < 0 ? 0 : (size - 1 - offset) / stride + 1;
  if (*lo > count) *lo = count;
  if (*hi > count) *hi = count;
  if (*hi < *lo) *hi = *lo;
}

struct MaxPoolLoops {
  // One output row at a time, one tap column at a time: for tap (r, s) the
  // whole row takes max(y[ow], x[r][ow*sw + s*dw - pl]) over the columns
  // where that tap is in bounds. The inner loop runs along the row, so it
  // vectorises (strided loads for stride 2), instead of one window at a time.
  template <typename T>
  static void Nchw(const MaxPool2dAttrs&, const Pool2dGeometry& g, const T* x,
                   T* y) {
    ForEachPlane(g, x, y, [&](const T* xp, T* yp) {
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const int64_t hstart = oh * g.sh - g.pt;
        int64_t r0, r1;
        PoolTapRange(hstart, g.kh, g.dh, g.h, &r0, &r1);
        T* __restrict yrow = yp + oh * g.ow;
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          yrow[ow] = -std::numeric_limits<T>::infinity();
        }
        for (int64_t r = r0; r < r1; ++r) {
          const T* xrow = xp + (hstart + r * g.dh) * g.w;
          for (int64_t s = 0; s < g.kw; ++s) {
            const int64_t offset = s * g.dw - g.pl;
            int64_t lo, hi;
            OutputColumns(offset, g.sw, g.w, g.ow, &lo, &hi);
            const T* __restrict src = xrow + offset;
            for (int64_t ow = lo; ow < hi; ++ow) {
              const T v = src[ow * g.sw];
              const T m = yrow[ow];
              yrow[ow] = (v > m || v != v) ? v : m;  // NaN propagates
            }
          }
        }
      }
    });
  }

  // max(acc, v), NaN propagating: a NaN tap wins and stays (a vector's
  // lanes each; `|` of the two compares, which works for T and vectors).
  template <typename T>
  struct MaxOp {
    template <typename V>
    V Init() const {
      return V{} + -std::numeric_limits<T>::infinity();
    }
    template <typename V>
    V Combine(V acc, V v) const {
      return ((v > acc) | (v != v)) ? v : acc;
    }
    template <typename V>
    V Finish(V acc) const {
      return acc;
    }
  };

  template <typename T>
  static void Nhwc(const MaxPool2dAttrs&, const Pool2dGeometry& g, const T* x,
                   T* y) {
    ForEachOutputRow(g, [&](int64_t n, int64_t oh) {
      const int64_t hstart = oh * g.sh - g.pt;
      int64_t r0, r1;
      PoolTapRange(hstart, g.kh, g.dh, g.h, &r0, &r1);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const int64_t wstart = ow * g.sw - g.pl;
        int64_t s0, s1;
        PoolTapRange(wstart, g.kw, g.dw, g.w, &s0, &s1);
        const T* image = x + n * g.xs.n;
        ReduceTapsNhwc(g.c, y + n * g.ys.n + oh * g.ys.h + ow * g.ys.w,
                       MaxOp<T>{}, [&](auto&& fn) {
                         for (int64_t r = r0; r < r1; ++r) {
                           for (int64_t s = s0; s < s1; ++s) {
                             fn(image + (hstart + r * g.dh) * g.xs.h +
                                (wstart + s * g.dw) * g.xs.w);
                           }
                         }
                       });
      }
    });
  }
};

AI3_REGISTER_ALGORITHM(MaxPool2dAttrs, "direct", Device::kCPU,
                       PoolDirect<MaxPool2dAttrs, MaxPoolLoops>);

}  // namespace
}  // namespace ai3
