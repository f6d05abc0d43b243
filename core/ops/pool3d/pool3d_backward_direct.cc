// maxpool3d_backward_data and avgpool3d_backward_data, "direct" each: dx
// zeroed, then each output's dy sent back through its window's taps
// (pool3d_direct.h's ForEachTap3d, the forward's walk): to the first
// maximum, in window order, of x (a NaN wins, a later NaN over an earlier
// one: the forward's choice), or as dy / divisor to every tap. (image,
// channel) planes own disjoint parts of dx and are spread over threads.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/pool3d/pool3d.h"
#include "core/ops/pool3d/pool3d_direct.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// fn(dx plane, x plane, dy plane, z, i, j, output offset) per output of
// every (image, channel) plane, after zeroing dx.
template <typename T, class Fn>
void ForEachOutput(const Pool3dGeometry& g, const T* x, const T* dy, T* dx,
                   const Fn& fn) {
  const int64_t in_step = g.x_channel == 1 ? g.c : 1;  // between positions
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    const int64_t n = plane / g.c, c = plane % g.c;
    T* dxc = dx + n * g.x_image + c * g.x_channel;
    const int64_t volume = g.in[0] * g.in[1] * g.in[2];
    for (int64_t p = 0; p < volume; ++p) dxc[p * in_step] = T(0);
    const T* xc = x + n * g.x_image + c * g.x_channel;
    const T* dyc = dy + n * g.y_image + c * g.y_channel;
    for (int64_t z = 0; z < g.out[0]; ++z)
      for (int64_t i = 0; i < g.out[1]; ++i)
        for (int64_t j = 0; j < g.out[2]; ++j) {
          fn(dxc, xc, z, i, j,
             dyc[z * g.y_step[0] + i * g.y_step[1] + j * g.y_step[2]]);
        }
  }
}

// maxpool3d's: dy to the window's first maximum (the forward's choice).
struct ToFirstMaximum {
  template <typename T>
  static void Send(const MaxPool3dBackwardDataAttrs&, const Pool3dGeometry& g,
                   T* dxc, const T* xc, int64_t z, int64_t i, int64_t j, T dy) {
    int64_t best = -1;
    T max = T(0);
    ForEachTap3d(g, z, i, j, [&](int64_t offset) {
      const T v = xc[offset];
      if (best < 0 || v > max || std::isnan(v)) {
        best = offset;
        max = v;
      }
    });
    if (best >= 0) dxc[best] += dy;
  }
};

// avgpool3d's: dy / divisor to every tap.
struct ToEveryTap {
  template <typename T>
  static void Send(const AvgPool3dBackwardDataAttrs& a, const Pool3dGeometry& g,
                   T* dxc, const T*, int64_t z, int64_t i, int64_t j, T dy) {
    const T share = dy / T(AvgDivisor3d(a, g, z, i, j));
    ForEachTap3d(g, z, i, j, [&](int64_t offset) { dxc[offset] += share; });
  }
};

template <class Attrs, class Route>
class GradientKernel : public MultiInputKernel {
 public:
  explicit GradientKernel(const Attrs& attrs) : attrs_(attrs) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const Pool3dGeometry g =
        Pool3dGeometryOf(attrs_, inputs[kForwardInput].shape);
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      ForEachOutput<T>(
          g, inputs[kForwardInput].data_as<const T>(),
          inputs[kGradOutput].data_as<const T>(), output.data_as<T>(),
          [&](T* dxc, const T* xc, int64_t z, int64_t i, int64_t j, T dy) {
            Route::Send(attrs_, g, dxc, xc, z, i, j, dy);
          });
      return 0;
    });
  }

 private:
  Attrs attrs_;
};

AI3_REGISTER_ALGORITHM(
    MaxPool3dBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<
        MaxPool3dBackwardDataAttrs,
        GradientKernel<MaxPool3dBackwardDataAttrs, ToFirstMaximum>>);
AI3_REGISTER_ALGORITHM(
    AvgPool3dBackwardDataAttrs, "direct", Device::kCPU,
    KernelAlgorithm<AvgPool3dBackwardDataAttrs,
                    GradientKernel<AvgPool3dBackwardDataAttrs, ToEveryTap>>);

}  // namespace
}  // namespace ai3
