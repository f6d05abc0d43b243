// conv2d_backward_bias "direct": db[k] = the sum of dy[n, k, oh, ow] over
// the batch and the pixels, one output channel per thread at a time
// (OpenMP over channels), either layout through its strides.
#include <cstdint>
#include <vector>

#include "core/ops/conv2d/backward/bias/conv2d_backward_bias.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DirectKernel
    : public Conv2dGradientKernel<Conv2dBackwardBiasAttrs, DirectKernel> {
 public:
  using Conv2dGradientKernel::Conv2dGradientKernel;

  size_t ScratchBytes(const std::vector<Tensor>&) const { return 0; }

  template <typename T>
  void RunTyped(const std::vector<Tensor>& inputs, const T* dy, T* db,
                void*) const {
    const Conv2dGeometry g = Geometry(inputs);
    const ImageStrides ys = ImageStridesOf({g.n, g.k, g.oh, g.ow}, g.layout);
    const int64_t pixels = g.oh * g.ow;
    // NCHW: a channel's pixels are contiguous (stride ys.w = 1); NHWC: one
    // stride of K apart, pixel p at p * ys.w.
    ParallelFor(0, g.k, g.k * g.n * pixels >= (1 << 16), [&](int64_t k) {
      T acc = 0;
      for (int64_t n = 0; n < g.n; ++n) {
        const T* dyk = dy + n * ys.n + k * ys.c;
        for (int64_t p = 0; p < pixels; ++p) acc += dyk[p * ys.w];
      }
      db[k] = acc;
    });
  }
};

AI3_REGISTER_ALGORITHM(
    Conv2dBackwardBiasAttrs, "direct", Device::kCPU,
    KernelAlgorithm<Conv2dBackwardBiasAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
