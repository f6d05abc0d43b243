// relu "direct" on CUDA: max(x, 0) per element; NaN passes through (v < 0 is
// false for NaN), as in PyTorch.
#include "core/cuda/elementwise.h"
#include "core/ops/relu/relu.h"

namespace ai3 {
namespace {

struct Op {
  explicit Op(const ReluAttrs&) {}
  template <typename T>
  __device__ T operator()(T v) const {
    return v < T(0) ? T(0) : v;
  }
};

using Direct = cuda::ElementwiseAlgorithm<ReluAttrs, Op>;
AI3_REGISTER_ALGORITHM(ReluAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
