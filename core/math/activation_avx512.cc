// The AVX-512 build of ApplyActivationParallel (core/math/activation.h):
// epilogue.h's loop, always inlined here, so that this file defines no weak
// copy of it the linker could also pick for the AVX2 callers (see
// core/ops/avx512_symbols_test.sh).
#include "core/math/activation.h"

namespace ai3 {

void ApplyActivationParallelAvx512(const Activation::Bounds<float>& act,
                                   float* p, int64_t n) {
  ApplyActivationParallel(act, p, n);
}

}  // namespace ai3
