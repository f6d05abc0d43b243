// conv2d_backward_weight "direct": the definition as plain loops,
//   dW[k, c, r, s] = sum over n, oh, ow of
//                    dy[n, k, oh, ow] * x[n, c of k's group,
//                                         oh*sh - ph + r*dh, ow*sw - pw + s*dw],
// one weight element per thread at a time (OpenMP over output x input
// channels), either layout through its strides. A reference, not a fast
// path.
#include <cstdint>
#include <vector>

#include "core/ops/conv2d/backward/weight/conv2d_backward_weight.h"
#include "core/ops/conv2d/conv2d_ranges.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel
    : public Conv2dGradientKernel<Conv2dBackwardWeightAttrs, DirectKernel> {
 public:
  using Conv2dGradientKernel::Conv2dGradientKernel;

  size_t ScratchBytes(const std::vector<Tensor>&) const { return 0; }

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* dw,
                void*) const {
    const Conv2dGeometry g = Geometry(inputs);
    const ImageStrides xs = ImageStridesOf({g.n, g.c, g.h, g.w}, g.layout);
    const ImageStrides ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    const T* x = inputs[1].data_as<const T>();
    const int64_t work = g.k * g.cg * g.kh * g.kw * g.n * g.oh * g.ow;
    ParallelFor(0, g.k * g.cg, work >= (1 << 16), [&](int64_t kc) {
      const int64_t k = kc / g.cg, cc = kc % g.cg;
      const int64_t c = (k / g.kg) * g.cg + cc;
      for (int64_t r = 0; r < g.kh; ++r) {
        for (int64_t s = 0; s < g.kw; ++s) {
          // The outputs whose tap (r, s) reads inside the input.
          int64_t oh_lo, oh_hi, ow_lo, ow_hi;
          ValidRange(r * g.dh - g.ph, g.sh, g.h, g.oh, &oh_lo, &oh_hi);
          ValidRange(s * g.dw - g.pw, g.sw, g.w, g.ow, &ow_lo, &ow_hi);
          T acc = 0;
          for (int64_t n = 0; n < g.n; ++n) {
            for (int64_t oh = oh_lo; oh < oh_hi; ++oh) {
              const int64_t ih = oh * g.sh - g.ph + r * g.dh;
              for (int64_t ow = ow_lo; ow < ow_hi; ++ow) {
                const int64_t iw = ow * g.sw - g.pw + s * g.dw;
                acc += dy[n * ys.n + k * ys.c + oh * ys.h + ow * ys.w] *
                       x[n * xs.n + c * xs.c + ih * xs.h + iw * xs.w];
              }
            }
          }
          dw[((k * g.cg + cc) * g.kh + r) * g.kw + s] = acc;
        }
      }
    });
  }
};

AI3_REGISTER_ALGORITHM(
    Conv2dBackwardWeightAttrs, "direct", Device::kCPU,
    KernelAlgorithm<Conv2dBackwardWeightAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
