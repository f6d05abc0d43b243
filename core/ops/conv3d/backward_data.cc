// conv3d_backward_data "direct": dx[n, c, p] = the sum, over the output
// channels k of c's group, the output positions o and their taps t that
// read p, of dy[n, k, o] * W[k, c - group start, t] (conv3d.h's definition
// read backwards). (image, input channel) pairs are spread over threads,
// each owning its plane of dx; either layout through the strides.
#include <algorithm>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/conv3d/conv3d.h"
#include "core/registry.h"

namespace ai3 {
namespace {

class DataKernel : public MultiInputKernel {
 public:
  DataKernel(const Conv3dBackwardDataAttrs& attrs,
             const std::vector<Tensor>& params)
      : attrs_(attrs), weight_(params[0].data) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Conv3dGeometry g = GeometryOf(attrs_, inputs[kForwardInput].shape);
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* dy = inputs[kGradOutput].data_as<const T>();
      const T* w = static_cast<const T*>(weight_);
      T* dx = output.data_as<T>();
      const int64_t taps = g.kernel_volume();
#pragma omp parallel for schedule(static) collapse(2)
      for (int64_t n = 0; n < g.n; ++n) {
        for (int64_t c = 0; c < g.c; ++c) {
          T* dxc = dx + n * g.x_image + c * g.x_channel;
          for (int64_t p = 0; p < g.in_volume(); ++p) {
            dxc[p * (g.x_channel == 1 ? g.c : 1)] = T(0);
          }
          const int64_t grp = c / g.cg, cc = c % g.cg;
          for (int64_t k = grp * g.kg; k < (grp + 1) * g.kg; ++k) {
            const T* dyk = dy + n * g.y_image + k * g.y_channel;
            const T* wk = w + (k * g.cg + cc) * taps;
            ForEachOutputTap(g, [&](int64_t out, int64_t in, int64_t tap) {
              dxc[in] += dyk[out] * wk[tap];
            });
          }
        }
      }
      return 0;
    });
  }

 private:
  Conv3dBackwardDataAttrs attrs_;
  const void* weight_;
};

AI3_REGISTER_ALGORITHM(Conv3dBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<Conv3dBackwardDataAttrs, DataKernel>);

}  // namespace
}  // namespace ai3
