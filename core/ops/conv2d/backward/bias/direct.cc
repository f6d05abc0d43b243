// conv2d_backward_bias "direct": db[k] = the sum of g.dy[n, k, oh, ow] over
// the batch and the pixels: NCHW one output channel per thread at a time
// (OpenMP over channels), NHWC as column sums of dy's rows (ColumnSums).
#include <cstdint>
#include <vector>

#include "core/ops/conv2d/backward/bias/conv2d_backward_bias.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct DirectKernel {
  template <typename T>
  static void Run(const Conv2dGradientCall<T>& g, T* db) {
    const int64_t pixels = g.oh * g.ow;
    if (g.layout == Layout::kNHWC) {  // rows of K channels
      ColumnSums(g.n * pixels, g.k, g.dy, db);
      return;
    }
    // NCHW: each channel's pixels are contiguous.
    ParallelFor(0, g.k, g.k * g.n * pixels >= (1 << 16), [&](int64_t k) {
      T acc = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const T* dyk = g.dy + n * g.ys.n + k * g.ys.c;
        for (int64_t p = 0; p < pixels; ++p) acc += dyk[p];
      }
      db[k] = acc;
    });
  }
};

AI3_REGISTER_ALGORITHM(
    Conv2dBackwardBiasAttrs, "direct", Device::kCPU,
    GradientFunctionAlgorithm<Conv2dBackwardBiasAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
