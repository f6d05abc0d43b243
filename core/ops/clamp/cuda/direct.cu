// clamp "direct" on CUDA: min(max(x, min), max) per element with the bounds
// rounded to the input's dtype; NaN passes through (both comparisons are
// false for it), as torch.clamp.
#include "core/cuda/elementwise.h"
#include "core/ops/clamp/clamp.h"

namespace ai3 {
namespace {

struct Op {
  explicit Op(const ClampAttrs& a) : lo(a.min), hi(a.max) {}
  template <typename T>
  __device__ T operator()(T v) const {
    const T l = static_cast<T>(lo), h = static_cast<T>(hi);
    return v < l ? l : (v > h ? h : v);
  }
  double lo, hi;
};

using Direct = cuda::ElementwiseAlgorithm<ClampAttrs, Op>;
AI3_REGISTER_ALGORITHM(ClampAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
