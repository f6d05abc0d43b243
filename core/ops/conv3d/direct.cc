// conv3d "direct": the definition (conv3d.h) as loops: each output
// channel's outputs start at the bias, then each input channel of its
// group adds every output position's taps that fall inside the input
// (ForEachOutputTap, the walk the gradients share). The (image, output
// channel) pairs are spread over OpenMP threads; either layout through the
// geometry's strides. The reference every other
// algorithm is checked beside, and what runs a layer no faster algorithm
// takes.
#include <algorithm>

#include "core/math/activation.h"
#include "core/math/dispatch.h"
#include "core/ops/conv3d/conv3d.h"

namespace ai3 {
namespace {

class DirectKernel : public WeightBiasKernel<Conv3dAttrs> {
 public:
  using WeightBiasKernel::WeightBiasKernel;

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const Conv3dGeometry g = GeometryOf(attrs_, input.shape);
    DispatchFloat(attrs_.dtype, [&](auto zero) {
      using T = decltype(zero);
      RunTyped(g, input.data_as<const T>(), output.data_as<T>());
      return 0;
    });
  }

 private:
  template <typename T>
  void RunTyped(const Conv3dGeometry& g, const T* x, T* y) const {
    const T* w = weight<T>();
    const T* b = bias<T>();
    const int64_t taps = g.kernel_volume();
    const int64_t step = g.y_channel == 1 ? g.k : 1;  // between positions
#pragma omp parallel for schedule(static) collapse(2)
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t k = 0; k < g.k; ++k) {
        const T* wk = w + k * g.cg * taps;
        const T* xg = x + n * g.x_image + k / g.kg * g.cg * g.x_channel;
        T* yk = y + n * g.y_image + k * g.y_channel;
        for (int64_t p = 0; p < g.out_volume(); ++p)
          yk[p * step] = b ? b[k] : T(0);
        for (int64_t c = 0; c < g.cg; ++c) {
          const T* xc = xg + c * g.x_channel;
          const T* wc = wk + c * taps;
          ForEachOutputTap(g, [&](int64_t out, int64_t in, int64_t tap) {
            yk[out] += xc[in] * wc[tap];
          });
        }
      }
    }
    ApplyActivationParallelWidest(attrs_.activation.As<T>(), y,
                                  g.n * g.y_image);
  }
};

AI3_REGISTER_ALGORITHM(Conv3dAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<Conv3dAttrs, DirectKernel>);

}  // namespace
}  // namespace ai3
