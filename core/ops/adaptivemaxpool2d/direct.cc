// adaptivemaxpool2d "direct": one task per (n, output row); within it, per
// output column, the window's max (AdaptiveSpan, pool2d.h)
// for every channel. Channels are the inner loop (vectorised over NHWC's
// contiguous channels; strided in NCHW, where the window walk is the cheaper
// part anyway), so one loop serves both layouts through the strides. NaN
// wins the max, as in PyTorch's max pooling.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/ops/adaptivemaxpool2d/adaptivemaxpool2d.h"
#include "core/ops/pool2d/pool2d_direct.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct AdaptiveMaxPoolLoops {
  template <typename T>
  static void Nhwc(const AdaptiveMaxPool2dAttrs&, const Pool2dGeometry& g,
                   const T* x, T* y) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < g.n * g.oh; ++t) {
      const int64_t n = t / g.oh, oh = t % g.oh;
      const auto [h0, h1] = AdaptiveSpan(oh, g.oh, g.h);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const auto [w0, w1] = AdaptiveSpan(ow, g.ow, g.w);
        T* yo = y + n * g.ys.n + oh * g.ys.h + ow * g.ys.w;
        const T* first = x + n * g.xs.n + h0 * g.xs.h + w0 * g.xs.w;
        for (int64_t c = 0; c < g.c; ++c) yo[c * g.ys.c] = first[c * g.xs.c];
        for (int64_t h = h0; h < h1; ++h) {
          for (int64_t w = w0; w < w1; ++w) {
            const T* xp = x + n * g.xs.n + h * g.xs.h + w * g.xs.w;
#pragma omp simd
            for (int64_t c = 0; c < g.c; ++c) {
              const T v = xp[c * g.xs.c];
              T& m = yo[c * g.ys.c];
              m = (v > m || v != v) ? v : m;  // v != v: NaN propagates
            }
          }
        }
      }
    }
  }
  // The same loop: the strides place the channels.
  template <typename T>
  static void Nchw(const AdaptiveMaxPool2dAttrs& a, const Pool2dGeometry& g,
                   const T* x, T* y) {
    Nhwc(a, g, x, y);
  }
};

AI3_REGISTER_ALGORITHM(
    AdaptiveMaxPool2dAttrs, "direct", Device::kCPU,
    PoolDirect<AdaptiveMaxPool2dAttrs, AdaptiveMaxPoolLoops>);

}  // namespace
}  // namespace ai3
