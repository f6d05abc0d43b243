// conv2d "direct" built for AVX-512: direct_kernel.h with 64-byte vectors,
// 2 vectors of output channels x 12 pixels in the 32 vector registers.
// Compiled with AVX-512 flags (core/ops/defs.bzl), so it is only ever called
// after core/cpu.h found AVX-512 on the running CPU.
#include "core/ops/conv2d/direct_kernel.h"

namespace ai3 {

void DirectAvx512(const DirectProblem<float>& p) {
  DirectCompute<float, /*kVectorBytes=*/64, /*kPixels=*/12>::Run(p);
}

void DirectAvx512(const DirectProblem<double>& p) {
  DirectCompute<double, /*kVectorBytes=*/64, /*kPixels=*/12>::Run(p);
}

}  // namespace ai3
