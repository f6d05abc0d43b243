// linear "direct": the definition as plain loops, one output element at a
// time (OpenMP over rows x outputs). A reference, not a fast path.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/ops/linear/linear.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel : public LinearKernelBase<DirectKernel> {
 public:
  using LinearKernelBase::LinearKernelBase;

  template <typename T>
  void RunTyped(const T* x, const T* w, const T* b, T* y, int64_t m, int64_t in,
                int64_t out) const {
    const auto act = attrs_.activation.As<T>();
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t o = 0; o < out; ++o) {
        const T* xi = x + i * in;
        const T* wo = w + o * in;
        T acc = 0;
        for (int64_t k = 0; k < in; ++k) acc += xi[k] * wo[k];
        y[i * out + o] = act(b ? acc + b[o] : acc);
      }
    }
  }
};

AI3_REGISTER_ALGORITHM(LinearAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<LinearAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
