// avgpool2d "direct": each output is its window's in-bounds sum divided as
// PyTorch divides: by divisor_override if set; else, with count_include_pad,
// by the window's size clipped to the padded input (so a window hanging past
// the bottom/right padding in ceil_mode counts fewer); else by the number of
// in-bounds elements. NCHW runs one thread per (n, c) plane; NHWC runs threads
// over (n, output row) with the channels in vector lanes, kept in registers
// over the window (ReduceTapsNhwc).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/ops/pool2d/pool2d.h"
#include "core/ops/pool2d/pool2d_direct.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct AvgPoolLoops {
  template <typename T>
  static void Nchw(const AvgPool2dAttrs& a, const Pool2dGeometry& g, const T* x,
                   T* y) {
    ForEachPlane(g, x, y, [&](const T* xp, T* yp) {
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const AvgSpan hs = AvgSpanOf(oh, g.sh, g.pt, g.pb, g.kh, g.h);
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const AvgSpan ws = AvgSpanOf(ow, g.sw, g.pl, g.pr, g.kw, g.w);
          T sum = 0;
          for (int64_t ih = hs.begin; ih < hs.end; ++ih) {
            for (int64_t iw = ws.begin; iw < ws.end; ++iw) {
              sum += xp[ih * g.w + iw];
            }
          }
          yp[oh * g.ow + ow] = sum / static_cast<T>(AvgDivisor(a, hs, ws));
        }
      }
    });
  }

  template <typename T>
  static void Nhwc(const AvgPool2dAttrs& a, const Pool2dGeometry& g, const T* x,
                   T* y) {
    ForEachOutputRow(g, [&](int64_t n, int64_t oh) {
      const AvgSpan hs = AvgSpanOf(oh, g.sh, g.pt, g.pb, g.kh, g.h);
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const AvgSpan ws = AvgSpanOf(ow, g.sw, g.pl, g.pr, g.kw, g.w);
        const T* image = x + n * g.xs.n;
        const AvgOp<T> op{static_cast<T>(AvgDivisor(a, hs, ws))};
        ReduceTapsNhwc(g.c, y + n * g.ys.n + oh * g.ys.h + ow * g.ys.w, op,
                       [&](auto&& fn) {
                         for (int64_t ih = hs.begin; ih < hs.end; ++ih) {
                           for (int64_t iw = ws.begin; iw < ws.end; ++iw) {
                             fn(image + ih * g.xs.h + iw * g.xs.w);
                           }
                         }
                       });
      }
    });
  }
};

AI3_REGISTER_ALGORITHM(AvgPool2dAttrs, "direct", Device::kCPU,
                       PoolDirect<AvgPool2dAttrs, AvgPoolLoops>);

}  // namespace
}  // namespace ai3
