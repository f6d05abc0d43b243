// linear_backward_bias "direct": db[o] = the sum over the rows i (every
// leading dimension of x) of dy[i, o]: ColumnSums (OpenMP over ranges of
// outputs).
#include <cstdint>
#include <vector>

#include "core/ops/linear/backward/bias/linear_backward_bias.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel
    : public LinearGradientKernel<LinearBackwardBiasAttrs, DirectKernel> {
 public:
  using LinearGradientKernel::LinearGradientKernel;

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* db,
                void*) const {
    const int64_t m = Rows(inputs);
    ColumnSums(m, attrs_.out_features, dy, db);
  }
};

AI3_REGISTER_ALGORITHM(
    LinearBackwardBiasAttrs, "direct", Device::kCPU,
    KernelAlgorithm<LinearBackwardBiasAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
