// conv3d_backward_weight "direct": dW[k, c', t] = the sum over the images
// and the output positions o of dy[n, k, o] * x[n, c, the input position o
// reads through tap t], c the c'-th channel of k's group (conv3d.h's
// definition read backwards). Output channels are spread over threads,
// each owning its rows of dW; either layout through the strides.
#include <algorithm>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/conv3d/conv3d.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class WeightKernel : public MultiInputKernel {
 public:
  explicit WeightKernel(const Conv3dBackwardWeightAttrs& attrs)
      : attrs_(attrs) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Conv3dGeometry g = GeometryOf(attrs_, inputs[kForwardInput].shape);
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = inputs[kGradOutput].data_as<const T>();
      const T* x = inputs[kForwardInput].data_as<const T>();
      T* dw = output.data_as<T>();
      const int64_t taps = g.kernel_volume();
#pragma omp parallel for schedule(static)
      for (int64_t k = 0; k < g.k; ++k) {
        T* dwk = dw + k * g.cg * taps;
        std::fill(dwk, dwk + g.cg * taps, T(0));
        const int64_t first = k / g.kg * g.cg;
        for (int64_t n = 0; n < g.n; ++n) {
          const T* dyk = dy + n * g.y_image + k * g.y_channel;
          for (int64_t cc = 0; cc < g.cg; ++cc) {
            const T* xc = x + n * g.x_image + (first + cc) * g.x_channel;
            T* dwc = dwk + cc * taps;
            ForEachOutputTap(g, [&](int64_t out, int64_t in, int64_t tap) {
              dwc[tap] += dyk[out] * xc[in];
            });
          }
        }
      }
      return 0;
    });
  }

 private:
  Conv3dBackwardWeightAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(
    Conv3dBackwardWeightAttrs, "direct", Device::kCPU,
    KernelAlgorithm<Conv3dBackwardWeightAttrs, WeightKernel>);

}  // namespace
}  // namespace ai3
