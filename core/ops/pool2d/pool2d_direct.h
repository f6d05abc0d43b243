// The CPU "direct" kernel every pool shares (maxpool2d, avgpool2d,
// adaptiveavgpool2d, adaptivemaxpool2d): Run takes the call's geometry
// (Pool2dGeometryOf) and, on the input's dtype, runs the op's loops for the
// layer's layout. Each op's file holds only its loops:
//   struct MaxPoolLoops {
//     template <typename T>
//     static void Nchw(const MaxPool2dAttrs&, const Pool2dGeometry&,
//                      const T* x, T* y);
//     template <typename T>
//     static void Nhwc(...);  // the same arguments
//   };
//   AI3_REGISTER_ALGORITHM(MaxPool2dAttrs, "direct", Device::kCPU,
//                          PoolDirect<MaxPool2dAttrs, MaxPoolLoops>);
#ifndef AI3_CORE_OPS_POOL2D_POOL2D_DIRECT_H_
#define AI3_CORE_OPS_POOL2D_POOL2D_DIRECT_H_

#include <cstdint>

#include "core/math/dispatch.h"
#include "core/ops/pool2d/pool2d.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

// How the pools' CPU loops split their work over OpenMP threads. NCHW:
// fn(xp, yp) for each (n, c) plane, xp and yp its input and output plane.
template <typename T, class Fn>
void ForEachPlane(const Pool2dGeometry& g, const T* x, T* y, Fn fn) {
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) {
    fn(x + plane * g.h * g.w, y + plane * g.oh * g.ow);
  }
}
// NHWC: fn(n, oh) for each image n and output row oh.
template <class Fn>
void ForEachOutputRow(const Pool2dGeometry& g, Fn fn) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oh = 0; oh < g.oh; ++oh) fn(n, oh);
  }
}

template <class Attrs, class Loops>
class PoolKernel : public Kernel {
 public:
  explicit PoolKernel(const Attrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const Pool2dGeometry g = Pool2dGeometryOf(attrs_, input.shape);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* x = input.data_as<const T>();
      T* y = output.data_as<T>();
      if (attrs_.layout == Layout::kNHWC) {
        Loops::Nhwc(attrs_, g, x, y);
      } else {
        Loops::Nchw(attrs_, g, x, y);
      }
    });
  }

 private:
  Attrs attrs_;
};

template <class Attrs, class Loops>
using PoolDirect = KernelAlgorithm<Attrs, PoolKernel<Attrs, Loops>>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_POOL2D_POOL2D_DIRECT_H_
