// linear_backward_data "gemm": dx[M, in] = dy[M, out] x W[out, in], one
// GEMM through ai3::Gemm (BLIS) over every leading dimension of x at once.
#include <cstdint>
#include <vector>

#include "core/math/gemm.h"
#include "core/ops/linear/backward/data/linear_backward_data.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct GemmKernel {
  template <typename T>
  static void Run(const LinearGradientCall<T>& c, T* dx) {
    Gemm<T>(false, false, c.rows, c.in, c.out, T(1), c.dy, c.out, c.weight,
            c.in, T(0), dx, c.in);
  }
};

AI3_REGISTER_ALGORITHM(
    LinearBackwardDataAttrs, "gemm", Device::kCPU,
    GradientFunctionAlgorithm<LinearBackwardDataAttrs, GemmKernel>);

}  // namespace
}  // namespace ai3
