// linear_backward_data "direct": dx[i, j] = sum over o of dy[i, o] W[o, j],
// one element at a time (OpenMP over rows x inputs). A reference.
#include <cstdint>
#include <vector>

#include "core/ops/linear/backward/data/linear_backward_data.h"
#include "core/parallel.h"
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
    const T* w = weight<T>();
    ParallelFor(0, m * in, m * in * out >= (1 << 16), [&](int64_t ij) {
      const int64_t i = ij / in, j = ij % in;
      T acc = 0;
      for (int64_t o = 0; o < out; ++o) acc += dy[i * out + o] * w[o * in + j];
      dx[ij] = acc;
    });
  }
};

AI3_REGISTER_ALGORITHM(
    LinearBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<LinearBackwardDataAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
