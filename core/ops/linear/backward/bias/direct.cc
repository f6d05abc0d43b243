// linear_backward_bias "direct": db[o] = the sum over the rows i (every
// leading dimension of x) of dy[i, o]: ColumnSums (OpenMP over ranges of
// outputs).
#include <cstdint>
#include <vector>

#include "core/ops/linear/backward/bias/linear_backward_bias.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct DirectKernel {
  template <typename T>
  static void Run(const LinearGradientCall<T>& c, T* db) {
    ColumnSums(c.rows, c.out, c.dy, db);
  }
};

AI3_REGISTER_ALGORITHM(
    LinearBackwardBiasAttrs, "direct", Device::kCPU,
    GradientFunctionAlgorithm<LinearBackwardBiasAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
