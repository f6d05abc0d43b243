// linear_backward_bias "direct": db[o] = the sum over the rows i (every
// leading dimension of x) of dy[i, o] (OpenMP over outputs).
#include <cstdint>
#include <vector>

#include "core/ops/linear/backward/bias/linear_backward_bias.h"
#include "core/parallel.h"
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
    const int64_t out = attrs_.out_features;
    ParallelFor(0, out, m * out >= (1 << 16), [&](int64_t o) {
      T acc = 0;
      for (int64_t i = 0; i < m; ++i) acc += dy[i * out + o];
      db[o] = acc;
    });
  }
};

AI3_REGISTER_ALGORITHM(
    LinearBackwardBiasAttrs, "direct", Device::kCPU,
    KernelAlgorithm<LinearBackwardBiasAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
