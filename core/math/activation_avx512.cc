// The AVX-512 build of ApplyActivationParallel (core/math/activation.h).
// Its loop is written here, in an unnamed namespace, rather than
// instantiated from epilogue.h's inline template: an instantiation would be
// a weak symbol the linker could also pick for the AVX2 callers (see
// core/ops/avx512_symbols_test.sh). ApplyActivation itself is always
// inlined.
#include <algorithm>

#include "core/math/activation.h"

namespace ai3 {
namespace {

void Run(const Activation::Bounds<float>& act, float* p, int64_t n) {
  if (!act.enabled) return;
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < chunks; ++i) {
    ApplyActivation(act, p + i * kChunk, std::min(kChunk, n - i * kChunk));
  }
}

}  // namespace

void ApplyActivationParallelAvx512(const Activation::Bounds<float>& act,
                                   float* p, int64_t n) {
  Run(act, p, n);
}

}  // namespace ai3
