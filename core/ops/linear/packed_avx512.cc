// linear "packed" built for AVX-512: packed_kernel.h with 64-byte vectors.
// Compiled with AVX-512 flags (core/ops/defs.bzl), so it is only ever called
// after core/cpu.h found AVX-512 on the running CPU.
#include "core/ops/linear/packed_kernel.h"

namespace ai3 {

void PackedLinearAvx512(const PackedLinearProblem<float>& p) {
  PackedLinear<float, 64>::Run(p);
}

void PackedLinearAvx512(const PackedLinearProblem<double>& p) {
  PackedLinear<double, 64>::Run(p);
}

}  // namespace ai3
