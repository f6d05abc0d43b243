// The per-channel affine map y = act(x * scale[c] + shift[c]) over a rank-4
// tensor in either layout: batchnorm2d's forward (act: the layer's fused
// activation, if any), and with a zero shift its input gradient
// (dx = dy * scale; the gradients take no activation).
#ifndef AI3_CORE_OPS_BATCHNORM2D_SCALE_SHIFT_KERNEL_H_
#define AI3_CORE_OPS_BATCHNORM2D_SCALE_SHIFT_KERNEL_H_

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/buffer.h"
#include "core/math/dispatch.h"
#include "core/math/epilogue.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace ai3 {

// Below this many elements threads cost more than they save.
constexpr int64_t kScaleShiftThreshold = 1 << 15;

// y[i] = act(value(i)) for i < n. A clamp (ReLU) is applied in the same
// vectorised loop (with none, the bounds are -inf/+inf, which change no value,
// NaN included); a function (SiLU, ...) in a second pass over the span just
// written, still in cache.
template <typename T, class Value>
inline void WriteActivated(T* __restrict y, int64_t n,
                           const Activation::Bounds<T>& act, Value value) {
  const bool function = act.enabled && act.fn != ActivationFn::kIdentity;
  const bool clamp = act.enabled && !function;
  const T lo = clamp ? act.lo : -std::numeric_limits<T>::infinity();
  const T hi = clamp ? act.hi : std::numeric_limits<T>::infinity();
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const T v = value(i);
    const T c = v < lo ? lo : v;
    y[i] = c > hi ? hi : c;
  }
  if (function) ApplyActivation(act, y, n);
}

template <typename T>
void ScaleShiftNchw(const ImageDims& d, const T* scale, const T* shift,
                    const Activation::Bounds<T>& act, const T* x, T* y) {
  const int64_t planes = d.n * d.c;
  const int64_t hw = d.h * d.w;
  ParallelFor(0, planes, planes * hw >= kScaleShiftThreshold, [&](int64_t p) {
    const T s = scale[p % d.c];
    const T b = shift[p % d.c];
    const T* __restrict xp = x + p * hw;
    WriteActivated(y + p * hw, hw, act,
                   [=](int64_t i) { return xp[i] * s + b; });
  });
}

template <typename T>
void ScaleShiftNhwc(const ImageDims& d, const T* scale, const T* shift,
                    const Activation::Bounds<T>& act, const T* x, T* y) {
  const int64_t pixels = d.n * d.h * d.w;
  const int64_t c = d.c;
  ParallelFor(0, pixels, pixels * c >= kScaleShiftThreshold, [&](int64_t p) {
    const T* __restrict xp = x + p * c;
    const T* __restrict s = scale;
    const T* __restrict b = shift;
    WriteActivated(y + p * c, c, act,
                   [=](int64_t k) { return xp[k] * s[k] + b[k]; });
  });
}

// The folded map of a layer (BatchNorm2dAttrs::FoldScaleShift), applied
// to a tensor: the forward, or with `shift` false the input gradient (the
// shift zeroed).
class ScaleShiftMap {
 public:
  ScaleShiftMap(const BatchNorm2dAttrs& attrs,
                const std::vector<Tensor>& params, bool shift)
      : attrs_(attrs), folded_(attrs.FoldScaleShift(params)) {
    if (!shift) {
      std::memset(folded_.as<char>() + folded_.size() / 2, 0,
                  folded_.size() / 2);
    }
  }

  void Apply(const Tensor& input, const Tensor& output) const {
    const ImageDims d = ImageDimsOf(input.shape, attrs_.layout);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      const T* scale = folded_.as<const T>();
      const T* shift = scale + attrs_.channels;
      const Activation::Bounds<T> act = attrs_.activation.As<T>();
      if (attrs_.layout == Layout::kNHWC) {
        ScaleShiftNhwc<T>(d, scale, shift, act, input.data_as<const T>(),
                          output.data_as<T>());
      } else {
        ScaleShiftNchw<T>(d, scale, shift, act, input.data_as<const T>(),
                          output.data_as<T>());
      }
    });
  }

  // The concatenation of `count` NHWC inputs along channels with the
  // forward map applied as it is copied (ai3::Model's concat -> batchnorm2d
  // fusion, core/graph.h: DenseNet's cat -> BN -> ReLU becomes one pass over
  // memory instead of two). x[k] holds widths[k] channels per pixel, y their
  // sum (the layer's channels) per pixel, for `pixels` pixels; threads split
  // the pixels.
  template <typename T>
  void ApplyConcatNhwc(const T* const* x, const int64_t* widths, int count,
                       int64_t pixels, T* y) const {
    const T* scale = folded_.as<const T>();
    const T* shift = scale + attrs_.channels;
    const Activation::Bounds<T> act = attrs_.activation.As<T>();
    const int64_t c = attrs_.channels;
    ParallelFor(0, pixels, pixels * c >= kScaleShiftThreshold, [&](int64_t p) {
      int64_t offset = 0;
      for (int k = 0; k < count; ++k) {
        const int64_t w = widths[k];
        const T* __restrict xp = x[k] + p * w;
        const T* __restrict s = scale + offset;
        const T* __restrict b = shift + offset;
        WriteActivated(y + p * c + offset, w, act,
                       [=](int64_t i) { return xp[i] * s[i] + b[i]; });
        offset += w;
      }
    });
  }

  const BatchNorm2dAttrs& attrs() const { return attrs_; }

 private:
  BatchNorm2dAttrs attrs_;
  Buffer folded_;  // scale[channels], then shift[channels], of attrs_.dtype
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_BATCHNORM2D_SCALE_SHIFT_KERNEL_H_
