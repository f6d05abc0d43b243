// conv2d_backward_weight "direct": the definition as plain loops,
//   dW[k, c, r, s] = sum over n, oh, ow of
//                    g.dy[n, k, oh, ow] * x[n, c of k's group,
//                                         oh*sh - ph + r*dh, ow*sw - pw +
//                                         s*dw],
// one output channel per thread at a time (OpenMP over output channels),
// either layout through its strides. A reference, not a fast path.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/ops/conv2d/backward/weight/conv2d_backward_weight.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct DirectKernel {
  template <typename T>
  static void Run(const Conv2dGradientCall<T>& g, T* dw) {
    const int64_t depth = g.cg * g.kh * g.kw;
    const int64_t work = g.k * depth * g.n * g.oh * g.ow;
    // One output channel's gradient row dW[k, :] per thread at a time: each
    // dy element is read once and spread over the taps that met it (reading
    // dy once per tap instead took 140x torch's time on NHWC, where dy's
    // channel k is one element every K).
    ParallelFor(0, g.k, work >= (1 << 16), [&](int64_t k) {
      T* dwk = dw + k * depth;
      std::fill(dwk, dwk + depth, T(0));
      const T* xg = g.x + (k / g.kg) * g.cg * g.xs.c;
      for (int64_t n = 0; n < g.n; ++n) {
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            const T d =
                g.dy[n * g.ys.n + k * g.ys.c + oh * g.ys.h + ow * g.ys.w];
            for (int64_t r = 0; r < g.kh; ++r) {
              const int64_t ih = oh * g.sh - g.ph + r * g.dh;
              if (ih < 0 || ih >= g.h) continue;
              for (int64_t s = 0; s < g.kw; ++s) {
                const int64_t iw = ow * g.sw - g.pw + s * g.dw;
                if (iw < 0 || iw >= g.w) continue;
                const T* xp = xg + n * g.xs.n + ih * g.xs.h + iw * g.xs.w;
                for (int64_t c = 0; c < g.cg; ++c) {
                  dwk[(c * g.kh + r) * g.kw + s] += d * xp[c * g.xs.c];
                }
              }
            }
          }
        }
      }
    });
  }
};

AI3_REGISTER_ALGORITHM(
    Conv2dBackwardWeightAttrs, "direct", Device::kCPU,
    GradientFunctionAlgorithm<Conv2dBackwardWeightAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
