// adaptiveavgpool2d "direct": output (i, j) averages input rows
// [floor(i*H/OH), ceil((i+1)*H/OH)) and the matching columns, as PyTorch
// (AdaptiveSpan, pool2d.h). NCHW runs one thread per (n, c) plane; NHWC runs
// threads over output pixels, and over channel ranges too where the pixels
// are fewer than the threads (a global pool), with the channels in vector
// lanes kept in registers over the window (ReduceTapsNhwc).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/ops/pool2d/pool2d.h"
#include "core/ops/pool2d/pool2d_direct.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct AdaptiveAvgPoolLoops {
  template <typename T>
  static void Nchw(const AdaptiveAvgPool2dAttrs&, const Pool2dGeometry& g,
                   const T* x, T* y) {
    ForEachPlane(g, x, y, [&](const T* xp, T* yp) {
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const auto [h0, h1] = AdaptiveSpan(oh, g.oh, g.h);
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const auto [w0, w1] = AdaptiveSpan(ow, g.ow, g.w);
          T sum = 0;
          for (int64_t ih = h0; ih < h1; ++ih) {
            for (int64_t iw = w0; iw < w1; ++iw) sum += xp[ih * g.w + iw];
          }
          yp[oh * g.ow + ow] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
        }
      }
    });
  }

  template <typename T>
  static void Nhwc(const AdaptiveAvgPool2dAttrs&, const Pool2dGeometry& g,
                   const T* x, T* y) {
    ForEachOutputPixelChannels<T>(
        g, [&](int64_t n, int64_t oh, int64_t ow, int64_t c0, int64_t c1) {
          const auto [h0, h1] = AdaptiveSpan(oh, g.oh, g.h);
          const auto [w0, w1] = AdaptiveSpan(ow, g.ow, g.w);
          const T* image = x + n * g.xs.n + c0;
          const AvgOp<T> op{static_cast<T>((h1 - h0) * (w1 - w0))};
          ReduceTapsNhwc(c1 - c0, y + n * g.ys.n + oh * g.ys.h + ow * g.ys.w + c0,
                         op, [&](auto&& fn) {
                           for (int64_t ih = h0; ih < h1; ++ih) {
                             for (int64_t iw = w0; iw < w1; ++iw) {
                               fn(image + ih * g.xs.h + iw * g.xs.w);
                             }
                           }
                         });
        });
  }
};

AI3_REGISTER_ALGORITHM(
    AdaptiveAvgPool2dAttrs, "direct", Device::kCPU,
    PoolDirect<AdaptiveAvgPool2dAttrs, AdaptiveAvgPoolLoops>);

}  // namespace
}  // namespace ai3
