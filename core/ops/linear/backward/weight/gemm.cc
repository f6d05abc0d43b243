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

struct GemmKernel {
  template <typename T>
  static void Run(const LinearGradientCall<T>& c, T* dw) {
    if (c.rows == 0) {  // an empty batch: an empty sum, which no GEMM is asked
      std::fill(dw, dw + c.out * c.in, T(0));
      return;
    }
    Gemm<T>(true, false, c.out, c.in, c.rows, T(1), c.dy, c.out, c.x, c.in,
            T(0), dw, c.in);
  }
};

AI3_REGISTER_ALGORITHM(
    LinearBackwardWeightAttrs, "gemm", Device::kCPU,
    GradientFunctionAlgorithm<LinearBackwardWeightAttrs, GemmKernel>);

}  // namespace
}  // namespace ai3
