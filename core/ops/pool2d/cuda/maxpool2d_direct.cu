// maxpool2d "direct" on CUDA: one thread per output element scans its
// window's in-bounds taps (PoolTapRange, as on the CPU), keeping NaN once
// seen, as PyTorch does. Both layouts, through the element strides.
#include <cstdint>
#include <limits>

#include "core/ops/pool2d/cuda/pool_kernel.h"
#include "core/ops/pool2d/pool2d.h"

namespace ai3 {
namespace {

struct MaxWindow {
  explicit MaxWindow(const MaxPool2dAttrs&) {}
  template <typename T>
  __device__ T operator()(const Pool2dGeometry& g, const cuda::OutputIndex& o,
                          const T* xp) const {
    const int64_t h0 = o.oh * g.sh - g.pt, w0 = o.ow * g.sw - g.pl;
    int64_t r0, r1, s0, s1;
    PoolTapRange(h0, g.kh, g.dh, g.h, &r0, &r1);
    PoolTapRange(w0, g.kw, g.dw, g.w, &s0, &s1);
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t s = s0; s < s1; ++s) {
        const T v = xp[(h0 + r * g.dh) * g.xs.h + (w0 + s * g.dw) * g.xs.w];
        if (v > m || isnan(v)) m = v;
      }
    }
    return m;
  }
};

AI3_REGISTER_ALGORITHM(MaxPool2dAttrs, "direct", Device::kCUDA,
                       cuda::PoolAlgorithm<MaxPool2dAttrs, MaxWindow>);

}  // namespace
}  // namespace ai3
