// conv2d "implicit gemm" built for AVX-512: implicit_gemm_kernel.h with
// 64-byte vectors. Compiled with AVX-512 flags (core/ops/defs.bzl), so it is
// only ever called after core/cpu.h found AVX-512 on the running CPU.
#include "core/ops/conv2d/implicit_gemm_kernel.h"

namespace ai3 {

void ImplicitGemmAvx512(const ImplicitGemmProblem<float>& p) {
  ImplicitGemmCompute<float, /*kVectorBytes=*/64>::Run(p);
}

void ImplicitGemmAvx512(const ImplicitGemmProblem<double>& p) {
  ImplicitGemmCompute<double, /*kVectorBytes=*/64>::Run(p);
}

}  // namespace ai3
