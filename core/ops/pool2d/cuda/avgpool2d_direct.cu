// avgpool2d "direct" on CUDA: one thread per output element sums its
// window's in-bounds elements and divides as PyTorch divides (the CPU
// kernel's rule): by divisor_override if set; else, with count_include_pad,
// by the window clipped to the padded input; else by the in-bounds count.
#include <cstdint>

#include "core/ops/pool2d/cuda/pool_kernel.h"
#include "core/ops/pool2d/pool2d.h"

namespace ai3 {
namespace {

struct AvgWindow {
  explicit AvgWindow(const AvgPool2dAttrs& a)
      : count_include_pad(a.count_include_pad),
        divisor_override(a.divisor_override) {}
  template <typename T>
  __device__ T operator()(const Pool2dGeometry& g, const cuda::OutputIndex& o,
                          const T* xp) const {
    const int64_t hs = o.oh * g.sh - g.pt, ws = o.ow * g.sw - g.pl;
    const int64_t he = min(hs + g.kh, g.h + g.pb),
                  we = min(ws + g.kw, g.w + g.pr);
    const int64_t h0 = max(hs, int64_t(0)), h1 = min(he, g.h);
    const int64_t w0 = max(ws, int64_t(0)), w1 = min(we, g.w);
    T sum = 0;
    for (int64_t ih = h0; ih < h1; ++ih) {
      for (int64_t iw = w0; iw < w1; ++iw) sum += xp[ih * g.xs.h + iw * g.xs.w];
    }
    const int64_t divisor = divisor_override > 0 ? divisor_override
                            : count_include_pad  ? (he - hs) * (we - ws)
                                                 : (h1 - h0) * (w1 - w0);
    return sum / static_cast<T>(divisor);
  }
  bool count_include_pad;
  int64_t divisor_override;
};

AI3_REGISTER_ALGORITHM(AvgPool2dAttrs, "direct", Device::kCUDA,
                       cuda::PoolAlgorithm<AvgPool2dAttrs, AvgWindow>);

}  // namespace
}  // namespace ai3
