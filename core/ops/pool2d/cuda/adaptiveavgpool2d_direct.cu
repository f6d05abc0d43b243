// adaptiveavgpool2d "direct" on CUDA: one thread per output element averages
// input rows floor(i * h / oh) .. ceil((i + 1) * h / oh) - 1 and likewise
// for columns, PyTorch's adaptive windows (AdaptiveSpan, as on the CPU).
#include <cstdint>

#include "core/ops/pool2d/cuda/pool_kernel.h"
#include "core/ops/pool2d/pool2d.h"

namespace ai3 {
namespace {

struct AdaptiveAvgWindow {
  explicit AdaptiveAvgWindow(const AdaptiveAvgPool2dAttrs&) {}
  template <typename T>
  __device__ T operator()(const Pool2dGeometry& g, const cuda::OutputIndex& o,
                          const T* xp) const {
    const PoolSpan hs = AdaptiveSpan(o.oh, g.oh, g.h);
    const PoolSpan ws = AdaptiveSpan(o.ow, g.ow, g.w);
    T sum = 0;
    for (int64_t ih = hs.begin; ih < hs.end; ++ih) {
      for (int64_t iw = ws.begin; iw < ws.end; ++iw) {
        sum += xp[ih * g.xs.h + iw * g.xs.w];
      }
    }
    return sum / static_cast<T>((hs.end - hs.begin) * (ws.end - ws.begin));
  }
};

AI3_REGISTER_ALGORITHM(
    AdaptiveAvgPool2dAttrs, "direct", Device::kCUDA,
    cuda::PoolAlgorithm<AdaptiveAvgPool2dAttrs, AdaptiveAvgWindow>);

}  // namespace
}  // namespace ai3
