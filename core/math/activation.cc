#include "core/math/activation.h"

#include "core/cpu.h"

namespace ai3 {

void ApplyActivationParallelWidest(const Activation::Bounds<float>& act,
                                   float* p, int64_t n) {
  if (KernelIsa() == Isa::kAvx512) {
    ApplyActivationParallelAvx512(act, p, n);
  } else {
    ApplyActivationParallel(act, p, n);
  }
}

}  // namespace ai3
