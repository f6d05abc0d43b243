// sigmoid "direct" on CUDA: 1 / (1 + exp(-x)) per element.
#include "core/cuda/elementwise.h"
#include "core/ops/sigmoid/sigmoid.h"

namespace ai3 {
namespace {

struct Op {
  explicit Op(const SigmoidAttrs&) {}
  template <typename T>
  __device__ T operator()(T v) const {
    return T(1) / (T(1) + exp(-v));
  }
};

using Direct = cuda::ElementwiseAlgorithm<SigmoidAttrs, Op>;
AI3_REGISTER_ALGORITHM(SigmoidAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
