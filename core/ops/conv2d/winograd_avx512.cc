// conv2d "winograd"'s channels-in-lanes path built for AVX-512:
// winograd_kernel.h with 64-byte vectors, 6 tiles x 4 vectors of output
// channels in the 32 vector registers. Compiled with AVX-512 flags
// (core/ops/defs.bzl), so it is only ever called after core/cpu.h found
// AVX-512 on the running CPU.
#include "core/ops/conv2d/winograd_kernel.h"

namespace ai3 {

void WinogradLanesAvx512(const WinogradLanesProblem<float>& p) {
  RunChannelsInLanes<float, /*kBytes=*/64>(p);
}

void WinogradLanesAvx512(const WinogradLanesProblem<double>& p) {
  RunChannelsInLanes<double, /*kBytes=*/64>(p);
}

}  // namespace ai3
