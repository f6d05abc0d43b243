// tanh "direct" on CUDA: tanh(x) per element.
#include "core/cuda/elementwise.h"
#include "core/ops/tanh/tanh.h"

namespace ai3 {
namespace {

struct Op {
  explicit Op(const TanhAttrs&) {}
  template <typename T>
  __device__ T operator()(T v) const {
    return tanh(v);
  }
};

using Direct = cuda::ElementwiseAlgorithm<TanhAttrs, Op>;
AI3_REGISTER_ALGORITHM(TanhAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
