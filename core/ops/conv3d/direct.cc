// conv3d "direct": the definition (conv3d.h) as loops, one output element
// at a time, summing over the window's taps that fall inside the input.
// The (image, output channel) pairs are spread over OpenMP threads; either
// layout through the geometry's strides. The reference every other
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
#pragma omp parallel for schedule(static) collapse(2)
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t k = 0; k < g.k; ++k) {
        const int64_t grp = k / g.kg;
        const T* wk = w + k * g.cg * taps;
        const T* xg = x + n * g.x_image + grp * g.cg * g.x_channel;
        T* yk = y + n * g.y_image + k * g.y_channel;
        for (int64_t z = 0; z < g.out[0]; ++z) {
          int64_t q0, q1;
          TapRange(g, 0, z, &q0, &q1);
          for (int64_t i = 0; i < g.out[1]; ++i) {
            int64_t r0, r1;
            TapRange(g, 1, i, &r0, &r1);
            for (int64_t j = 0; j < g.out[2]; ++j) {
              int64_t s0, s1;
              TapRange(g, 2, j, &s0, &s1);
              T sum = b ? b[k] : T(0);
              for (int64_t c = 0; c < g.cg; ++c) {
                const T* xc = xg + c * g.x_channel;
                const T* wc = wk + c * taps;
                for (int64_t q = q0; q < q1; ++q) {
                  const T* xq = xc + InputPosition(g, 0, z, q) * g.x_step[0];
                  for (int64_t r = r0; r < r1; ++r) {
                    const T* xr = xq + InputPosition(g, 1, i, r) * g.x_step[1];
                    const T* wr = wc + (q * g.kernel[1] + r) * g.kernel[2];
                    for (int64_t s = s0; s < s1; ++s) {
                      sum +=
                          xr[InputPosition(g, 2, j, s) * g.x_step[2]] * wr[s];
                    }
                  }
                }
              }
              yk[z * g.y_step[0] + i * g.y_step[1] + j * g.y_step[2]] = sum;
            }
          }
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
