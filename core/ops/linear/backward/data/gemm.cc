// linear_backward_data "gemm": dx[M, in] = dy[M, out] x W[out, in], one
// GEMM through ai3::Gemm (BLIS) over every leading dimension of x at once.
#include <cstdint>
#include <vector>

#include "core/math/gemm.h"
#include "core/ops/linear/backward/data/linear_backward_data.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class GemmKernel
    : public LinearGradientKernel<LinearBackwardDataAttrs, GemmKernel> {
 public:
  using LinearGradientKernel::LinearGradientKernel;

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* dx,
                void*) const {
    const int64_t in = attrs_.in_features, out = attrs_.out_features;
    Gemm<T>(false, false, Rows(inputs), in, out, T(1), dy, out, weight<T>(),
            in, T(0), dx, in);
  }
};

AI3_REGISTER_ALGORITHM(LinearBackwardDataAttrs, "gemm", Device::kCPU,
                       KernelAlgorithm<LinearBackwardDataAttrs, GemmKernel>);

}  // namespace
}  // namespace ai3
