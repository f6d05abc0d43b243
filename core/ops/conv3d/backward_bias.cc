// conv3d_backward_bias "direct": db[k] = the sum of dy[n, k, o] over the
// images and the output positions, in either layout: output channels
// spread over threads.
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/conv3d/conv3d.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class BiasKernel : public MultiInputKernel {
 public:
  explicit BiasKernel(const Conv3dBackwardBiasAttrs& attrs) : attrs_(attrs) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Conv3dGeometry g = GeometryOf(attrs_, inputs[kForwardInput].shape);
    const int64_t positions = g.out_volume();
    const int64_t step = g.y_channel == 1 ? g.k : 1;  // between positions
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = inputs[kGradOutput].data_as<const T>();
      T* db = output.data_as<T>();
#pragma omp parallel for schedule(static)
      for (int64_t k = 0; k < g.k; ++k) {
        T sum = 0;
        for (int64_t n = 0; n < g.n; ++n) {
          const T* dyk = dy + n * g.y_image + k * g.y_channel;
          for (int64_t p = 0; p < positions; ++p) sum += dyk[p * step];
        }
        db[k] = sum;
      }
      return 0;
    });
  }

 private:
  Conv3dBackwardBiasAttrs attrs_;
};

AI3_REGISTER_ALGORITHM(Conv3dBackwardBiasAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<Conv3dBackwardBiasAttrs, BiasKernel>);

}  // namespace
}  // namespace ai3
