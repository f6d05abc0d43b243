// silu "direct" on CUDA: x / (1 + exp(-x)) per element (x * sigmoid(x)).
#include "core/cuda/elementwise.h"
#include "core/ops/silu/silu.h"

namespace ai3 {
namespace {

struct Op {
  explicit Op(const SiluAttrs&) {}
  template <typename T>
  __device__ T operator()(T v) const {
    return v / (T(1) + exp(-v));
  }
};

using Direct = cuda::ElementwiseAlgorithm<SiluAttrs, Op>;
AI3_REGISTER_ALGORITHM(SiluAttrs, "direct", Device::kCUDA, Direct);

}  // namespace
}  // namespace ai3
