// linear "gemm": y[M, out] = x[M, in] * W^T through ai3::Gemm (BLIS), with
// the bias broadcast into y first and accumulated by the GEMM (beta = 1). The
// default in float64 outside "packed"'s range (linear_schema.cc); float32's
// there is oneDNN's "guess", which measured faster (pointwise_conv_kernel.h).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/activation.h"
#include "core/math/gemm.h"
#include "core/ops/linear/linear.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class GemmKernel : public LinearKernelBase<GemmKernel> {
 public:
  using LinearKernelBase::LinearKernelBase;

  template <typename T>
  void RunTyped(const T* x, const T* w, const T* b, T* y, int64_t m, int64_t in,
                int64_t out) const {
    if (b) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < m; ++i) {
        T* row = y + i * out;
        for (int64_t o = 0; o < out; ++o) row[o] = b[o];
      }
    }
    Gemm<T>(/*trans_a=*/false, /*trans_b=*/true, m, out, in, T(1), x, in, w, in,
            b ? T(1) : T(0), y, out);
    // The fused activation: one pass over the output while it is still in
    // cache (the GEMM is a library call, so this is as close as it gets),
    // at the CPU's widest vectors.
    ApplyActivationParallelWidest(attrs_.activation.As<T>(), y, m * out);
  }
};

AI3_REGISTER_ALGORITHM(LinearAttrs, "gemm", Device::kCPU,
                       KernelAlgorithm<LinearAttrs, GemmKernel>);

}  // namespace
}  // namespace ai3
