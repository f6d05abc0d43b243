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

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>

#include "core/math/dispatch.h"
#include "core/math/vectors.h"
#include "core/ops/pool2d/pool2d.h"
#include "core/registry.h"
#include "core/tensor.h"

namespace ai3 {

// How the pools' CPU loops split their work over OpenMP threads. NCHW:
// fn(xp, yp) for each (n, c) plane, xp and yp its input and output plane.
// NCHW by plane index: fn(plane) for each of the n * c planes.
template <class Fn>
void ForEachPlaneIndex(const Pool2dGeometry& g, Fn fn) {
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < g.n * g.c; ++plane) fn(plane);
}
template <typename T, class Fn>
void ForEachPlane(const Pool2dGeometry& g, const T* x, T* y, Fn fn) {
  ForEachPlaneIndex(g, [&](int64_t plane) {
    fn(x + plane * g.h * g.w, y + plane * g.oh * g.ow);
  });
}
// NHWC: fn(n, oh) for each image n and output row oh.
template <class Fn>
void ForEachOutputRow(const Pool2dGeometry& g, Fn fn) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oh = 0; oh < g.oh; ++oh) fn(n, oh);
  }
}

// One NHWC output pixel: y[k] = op.Finish(op.Combine over the window's taps
// of tap[k]) for the c channels, where taps(fn) calls fn(tap) with each
// in-bounds input pixel's channels. The channels run in vector lanes, and a
// block of 4 vectors stays in registers across all of the window's taps
// (writing y once, instead of reading and writing it once per tap); then
// single vectors, then scalars. Op: Init<V>() (a vector or T of the
// starting value), Combine(acc, v), Finish(acc), each for a vector or T.
template <typename T, class Op, class Taps>
inline void ReduceTapsNhwc(int64_t c, T* y, const Op& op, const Taps& taps) {
  using Vec = Vectors<T, 32>;  // AVX2's width: these TUs build for AVX2
  using V = typename Vec::V;
  constexpr int64_t kLanes = Vec::kLanes;
  constexpr int64_t kBlock = 4 * kLanes;
  int64_t k = 0;
  for (; k + kBlock <= c; k += kBlock) {
    V acc[4];
    for (V& a : acc) a = op.template Init<V>();
    taps([&](const T* xp) {
      for (int64_t j = 0; j < 4; ++j) {
        acc[j] = op.Combine(acc[j], Vec::Load(xp + k + j * kLanes));
      }
    });
    for (int64_t j = 0; j < 4; ++j) {
      Vec::Store(y + k + j * kLanes, op.Finish(acc[j]));
    }
  }
  for (; k + kLanes <= c; k += kLanes) {
    V acc = op.template Init<V>();
    taps([&](const T* xp) { acc = op.Combine(acc, Vec::Load(xp + k)); });
    Vec::Store(y + k, op.Finish(acc));
  }
  for (; k < c; ++k) {
    T acc = op.template Init<T>();
    taps([&](const T* xp) { acc = op.Combine(acc, xp[k]); });
    y[k] = op.Finish(acc);
  }
}

// The sum of p[0, len): four vector accumulators, then the lanes, then the
// tail. A plain `sum += p[i]` loop is one add at a time (the compiler may
// not reorder float additions), 4 cycles each: an NCHW global pool over a
// 112x112 plane.
template <typename T>
inline T SumContiguous(const T* p, int64_t len) {
  using Vec = Vectors<T, 32>;  // AVX2's width: these TUs build for AVX2
  using V = typename Vec::V;
  constexpr int64_t kLanes = Vec::kLanes;
  int64_t i = 0;
  V acc[4] = {V{}, V{}, V{}, V{}};
  for (; i + 4 * kLanes <= len; i += 4 * kLanes) {
    for (int64_t j = 0; j < 4; ++j) acc[j] += Vec::Load(p + i + j * kLanes);
  }
  for (; i + kLanes <= len; i += kLanes) acc[0] += Vec::Load(p + i);
  const V v = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  T sum = 0;
  for (int64_t l = 0; l < kLanes; ++l) sum += v[l];
  for (; i < len; ++i) sum += p[i];
  return sum;
}

// ReduceTapsNhwc's op for an average: the window's sum divided by its
// divisor (as a division, like PyTorch).
template <typename T>
struct AvgOp {
  T divisor;
  template <typename V>
  V Init() const {
    return V{} + T(0);
  }
  template <typename V>
  V Combine(V acc, V v) const {
    return acc + v;
  }
  template <typename V>
  V Finish(V acc) const {
    return acc / (V{} + divisor);
  }
};

// Loops::Nhwc or Loops::Nchw, as the layer's layout says, on the output's
// dtype: (attrs, the geometry of the forward input `x_shape`, the data of
// each of `inputs`, the output's).
inline int64_t AvgDivisor(const AvgPool2dAttrs& a, const AvgSpan& h,
                          const AvgSpan& w) {
  if (a.divisor_override > 0) return a.divisor_override;
  if (a.count_include_pad) return h.padded * w.padded;
  return (h.end - h.begin) * (w.end - w.begin);
}

template <class Loops, class Attrs, size_t kInputs>
void RunPoolLoops(const Attrs& attrs, const Shape& x_shape,
                  const std::array<const Tensor*, kInputs>& inputs,
                  const Tensor& output) {
  const Pool2dGeometry g = Pool2dGeometryOf(attrs, x_shape);
  DispatchFloat(output.dtype, [&](auto zero) {
    using T = decltype(zero);
    std::apply(
        [&](const auto*... in) {
          if (attrs.layout == Layout::kNHWC) {
            Loops::Nhwc(attrs, g, in->template data_as<const T>()...,
                        output.data_as<T>());
          } else {
            Loops::Nchw(attrs, g, in->template data_as<const T>()...,
                        output.data_as<T>());
          }
        },
        inputs);
  });
}

template <class Attrs, class Loops>
class PoolKernel : public Kernel {
 public:
  explicit PoolKernel(const Attrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    RunPoolLoops<Loops>(attrs_, input.shape, std::array{&input}, output);
  }

 private:
  Attrs attrs_;
};

template <class Attrs, class Loops>
using PoolDirect = KernelAlgorithm<Attrs, PoolKernel<Attrs, Loops>>;

}  // namespace ai3

#endif  // AI3_CORE_OPS_POOL2D_POOL2D_DIRECT_H_
