// linear_backward_weight "direct": dW[o, j] = sum over the rows i (every
// leading dimension of x) of dy[i, o] x[i, j], one element at a time
// (OpenMP over outputs x inputs). A reference.
#include <cstdint>
#include <vector>

#include "core/ops/linear/backward/weight/linear_backward_weight.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel
    : public LinearGradientKernel<LinearBackwardWeightAttrs, DirectKernel> {
 public:
  using LinearGradientKernel::LinearGradientKernel;

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* dw,
                void*) const {
    const int64_t m = Rows(inputs);
    const int64_t in = attrs_.in_features, out = attrs_.out_features;
    const T* x = inputs[1].data_as<const T>();
    ParallelFor(0, out * in, m * in * out >= (1 << 16), [&](int64_t oj) {
      const int64_t o = oj / in, j = oj % in;
      T acc = 0;
      for (int64_t i = 0; i < m; ++i) acc += dy[i * out + o] * x[i * in + j];
      dw[oj] = acc;
    });
  }
};

AI3_REGISTER_ALGORITHM(
    LinearBackwardWeightAttrs, "direct", Device::kCPU,
    KernelAlgorithm<LinearBackwardWeightAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
