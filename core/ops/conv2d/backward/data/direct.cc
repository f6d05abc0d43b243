// conv2d_backward_data "direct": the definition as plain loops. Each input
// element gathers the output gradients of the outputs that read it,
//   dx[n, c, ih, iw] = sum over k of c's group, r, s with
//                      ih = oh*sh - ph + r*dh, iw = ow*sw - pw + s*dw
//                      of g.dy[n, k, oh, ow] * W[k, c, r, s],
// so no two threads write one element (OpenMP over images x channels).
// Either layout, through its strides. A reference, not a fast path.
#include <cstdint>
#include <vector>

#include "core/ops/conv2d/backward/data/conv2d_backward_data.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

struct DirectKernel {
  template <typename T>
  static void Run(const Conv2dGradientCall<T>& g, T* dx) {
    const int64_t work = g.n * g.c * g.h * g.w * g.kg * g.kh * g.kw;
    ParallelFor(0, g.n * g.c, work >= (1 << 16), [&](int64_t nc) {
      const int64_t n = nc / g.c, c = nc % g.c;
      const int64_t grp = c / g.cg, cc = c % g.cg;
      for (int64_t ih = 0; ih < g.h; ++ih) {
        for (int64_t iw = 0; iw < g.w; ++iw) {
          T acc = 0;
          for (int64_t r = 0; r < g.kh; ++r) {
            const int64_t th = ih + g.ph - r * g.dh;  // oh * sh
            if (th < 0 || th % g.sh) continue;
            const int64_t oh = th / g.sh;
            if (oh >= g.oh) continue;
            for (int64_t s = 0; s < g.kw; ++s) {
              const int64_t tw = iw + g.pw - s * g.dw;  // ow * sw
              if (tw < 0 || tw % g.sw) continue;
              const int64_t ow = tw / g.sw;
              if (ow >= g.ow) continue;
              for (int64_t kk = 0; kk < g.kg; ++kk) {
                const int64_t k = grp * g.kg + kk;
                acc +=
                    g.dy[n * g.ys.n + k * g.ys.c + oh * g.ys.h + ow * g.ys.w] *
                    g.weight[((k * g.cg + cc) * g.kh + r) * g.kw + s];
              }
            }
          }
          dx[n * g.xs.n + c * g.xs.c + ih * g.xs.h + iw * g.xs.w] = acc;
        }
      }
    });
  }
};

AI3_REGISTER_ALGORITHM(
    Conv2dBackwardDataAttrs, "direct", Device::kCPU,
    GradientFunctionAlgorithm<Conv2dBackwardDataAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
