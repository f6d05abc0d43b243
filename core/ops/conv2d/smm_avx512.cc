// conv2d "smm" built for AVX-512: smm_kernel.h with 64-byte vectors.
// Compiled with AVX-512 flags (core/ops/defs.bzl), so it is only ever called
// after core/cpu.h found AVX-512 on the running CPU.
#include "core/ops/conv2d/smm_kernel.h"

namespace ai3 {

void SmmAvx512(const SmmProblem<float>& p) {
  RunSmm<float, /*kVectorBytes=*/64>(p);
}

void SmmAvx512(const SmmProblem<double>& p) {
  RunSmm<double, /*kVectorBytes=*/64>(p);
}

}  // namespace ai3
