// linear_backward_weight "direct": dW[o, j] = sum over the rows i (every
// leading dimension of x) of dy[i, o] x[i, j], one element at a time
// (OpenMP over outputs x inputs). A reference.
#include <cstdint>
#include <vector>

#include "core/ops/linear/backward/weight/linear_backward_weight.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct DirectKernel {
  template <typename T>
  static void Run(const LinearGradientCall<T>& c, T* dw) {
    // dW[o, j] = sum over i of dy[i, o] x[i, j].
    StridedDots<T>(c.out, c.in, c.rows, c.dy, 1, c.out, c.x, 1, c.in, dw);
  }
};

AI3_REGISTER_ALGORITHM(
    LinearBackwardWeightAttrs, "direct", Device::kCPU,
    GradientFunctionAlgorithm<LinearBackwardWeightAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
