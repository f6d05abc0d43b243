// linear_backward_data "direct": dx[i, j] = sum over o of dy[i, o] W[o, j],
// one element at a time (OpenMP over rows x inputs). A reference.
#include <cstdint>
#include <vector>

#include "core/ops/linear/backward/data/linear_backward_data.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct DirectKernel {
  template <typename T>
  static void Run(const LinearGradientCall<T>& c, T* dx) {
    // dx[i, j] = sum over o of dy[i, o] W[o, j].
    StridedDots<T>(c.rows, c.in, c.out, c.dy, c.out, 1, c.weight, 1, c.in, dx);
  }
};

AI3_REGISTER_ALGORITHM(
    LinearBackwardDataAttrs, "direct", Device::kCPU,
    GradientFunctionAlgorithm<LinearBackwardDataAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
