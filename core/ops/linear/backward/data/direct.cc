// linear_backward_data "direct": dx[i, j] = sum over o of dy[i, o] W[o, j],
// one element at a time (OpenMP over rows x inputs). A reference.
#include <cstdint>
#include <vector>

#include "core/ops/linear/backward/data/linear_backward_data.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel
    : public LinearGradientKernel<LinearBackwardDataAttrs, DirectKernel> {
 public:
  using LinearGradientKernel::LinearGradientKernel;

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* dx,
                void*) const {
    const int64_t m = Rows(inputs);
    const int64_t in = attrs_.in_features, out = attrs_.out_features;
    // dx[i, j] = sum over o of dy[i, o] W[o, j].
    StridedDots<T>(m, in, out, dy, out, 1, weight<T>(), 1, in, dx);
  }
};

AI3_REGISTER_ALGORITHM(
    LinearBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<LinearBackwardDataAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
