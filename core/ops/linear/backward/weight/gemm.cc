// linear_backward_weight "gemm": dW[out, in] = dy^T [out, M] x x[M, in],
// one GEMM through ai3::Gemm (BLIS) whose depth is every row of the batch
// (all leading dimensions of x), reading dy transposed in place.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/math/gemm.h"
#include "core/ops/linear/backward/weight/linear_backward_weight.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class GemmKernel
    : public LinearGradientKernel<LinearBackwardWeightAttrs, GemmKernel> {
 public:
  using LinearGradientKernel::LinearGradientKernel;

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* dw,
                void*) const {
    const int64_t m = Rows(inputs);
    const int64_t in = attrs_.in_features, out = attrs_.out_features;
    if (m == 0) {  // an empty batch: an empty sum, which no GEMM is asked
      std::fill(dw, dw + out * in, T(0));
      return;
    }
    Gemm<T>(true, false, out, in, m, T(1), dy, out,
            inputs[1].data_as<const T>(), in, T(0), dw, in);
  }
};

AI3_REGISTER_ALGORITHM(LinearBackwardWeightAttrs, "gemm", Device::kCPU,
                       KernelAlgorithm<LinearBackwardWeightAttrs, GemmKernel>);

}  // namespace
}  // namespace ai3
