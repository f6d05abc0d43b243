// The per-channel affine map y = act(x * scale[c] + shift[c]) over a rank-4
// tensor in either layout: batchnorm2d's forward (act: the layer's fused
// activation, if any), and with a zero shift its input gradient
// (dx = dy * scale; the gradients take no activation).
#ifndef AI3_CORE_OPS_BATCHNORM2D_SCALE_SHIFT_KERNEL_H_
#define AI3_CORE_OPS_BATCHNORM2D_SCALE_SHIFT_KERNEL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/buffer.h"
#include "core/math/dispatch.h"
#include "core/math/epilogue.h"
#include "core/math/vectors.h"
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace ai3 {

// Below this many elements threads cost more than they save.
constexpr int64_t kScaleShiftThreshold = 1 << 15;

// Whether `act` is a function (SiLU, ...) rather than a clamp or nothing.
template <typename T>
inline bool IsFunction(const Activation::Bounds<T>& act) {
  return act.enabled && act.fn != ActivationFn::kIdentity;
}

// The bounds of a clamp activation (ReLU, ReLU6); for none or a function,
// -inf/+inf, which change no value, NaN included.
template <typename T>
inline void ClampBounds(const Activation::Bounds<T>& act, T* lo, T* hi) {
  const bool clamp = act.enabled && !IsFunction(act);
  *lo = clamp ? act.lo : -std::numeric_limits<T>::infinity();
  *hi = clamp ? act.hi : std::numeric_limits<T>::infinity();
}

// y[i] = act(value(i)) for i < n. A clamp (ReLU) is applied in the same
// vectorised loop (ClampBounds); a function (SiLU, ...) in a second pass
// over the span just written, still in cache.
template <typename T, class Value>
inline void WriteActivated(T* __restrict y, int64_t n,
                           const Activation::Bounds<T>& act, Value value) {
  const bool function = IsFunction(act);
  T lo, hi;
  ClampBounds(act, &lo, &hi);
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
    const ImageDims d = ChannelDims(input.shape, attrs_.layout);
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
  //
  // With a clamp or no activation, each thread maps a run of pixels one
  // input at a time, a block of channels at a time (MapColumns), with the
  // block's scale and shift in registers, instead of a loop per (pixel,
  // input) that set up pointers and bounds for 4 vectors of work
  // (DenseNet's inputs are 32 channels wide). DenseNet-121, b1, 2-core
  // Xeon: its concats took 3.62-3.71 ms a forward before, 3.27-3.34 after;
  // the pass is bound by memory more than by that setup.
  template <typename T>
  void ApplyConcatNhwc(const T* const* x, const int64_t* widths, int count,
                       int64_t pixels, T* y) const {
    const T* scale = folded_.as<const T>();
    const T* shift = scale + attrs_.channels;
    const Activation::Bounds<T> act = attrs_.activation.As<T>();
    const int64_t c = attrs_.channels;
    const bool parallel = pixels * c >= kScaleShiftThreshold;
    if (IsFunction(act)) {
      // A function (SiLU, ...): WriteActivated's second pass over each span.
      ParallelFor(0, pixels, parallel, [&](int64_t p) {
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
      return;
    }
    // Runs of pixels whose output rows fit in L1, so that the inputs fill
    // their lines there (mapping all of a thread's pixels one input at a
    // time left each line part-written until the last input came to it).
    const int64_t run = std::max<int64_t>(
        8, kConcatRunBytes / (c * static_cast<int64_t>(sizeof(T))));
    ParallelRanges(0, pixels, parallel, [=](int64_t lo_pixel, int64_t end) {
      for (int64_t p0 = lo_pixel; p0 < end; p0 += run) {
        const int64_t rows = std::min(run, end - p0);
        int64_t offset = 0;
        for (int k = 0; k < count; ++k) {
          const int64_t w = widths[k];
          MapColumns(x[k] + p0 * w, w, rows, scale + offset, shift + offset,
                     act, y + p0 * c + offset, c);
          offset += w;
        }
      }
    });
  }

  const BatchNorm2dAttrs& attrs() const { return attrs_; }

 private:
  static constexpr int64_t kConcatRunBytes = 16 << 10;

  // dst[r * ld + j] = act(src[r * w + j] * s[j] + b[j]) for rows r < rows
  // and columns j < w, `act` a clamp or none: kBlockVectors vectors of
  // columns at a time, their scale and shift loaded once for all the rows,
  // then the columns left over a row at a time (WriteActivated).
  template <typename T>
  static void MapColumns(const T* __restrict src, int64_t w, int64_t rows,
                         const T* __restrict s, const T* __restrict b,
                         const Activation::Bounds<T>& act, T* __restrict dst,
                         int64_t ld) {
    using Vec = Vectors<T, 32>;  // AVX2's width: graph.cc builds for AVX2
    using V = typename Vec::V;
    constexpr int64_t kBlockVectors = 4;
    constexpr int64_t kBlock = kBlockVectors * Vec::kLanes;
    T lo, hi;
    ClampBounds(act, &lo, &hi);
    const V vlo = V{} + lo, vhi = V{} + hi;
    int64_t j0 = 0;
    for (; j0 + kBlock <= w; j0 += kBlock) {
      V scale[kBlockVectors], shift[kBlockVectors];
      for (int64_t v = 0; v < kBlockVectors; ++v) {
        scale[v] = Vec::Load(s + j0 + v * Vec::kLanes);
        shift[v] = Vec::Load(b + j0 + v * Vec::kLanes);
      }
      for (int64_t r = 0; r < rows; ++r) {
        const T* in = src + r * w + j0;
        T* out = dst + r * ld + j0;
        for (int64_t v = 0; v < kBlockVectors; ++v) {
          V m = Vec::Load(in + v * Vec::kLanes) * scale[v] + shift[v];
          m = m < vlo ? vlo : m;  // as WriteActivated: NaN kept
          Vec::Store(out + v * Vec::kLanes, m > vhi ? vhi : m);
        }
      }
    }
    if (j0 == w) return;
    for (int64_t r = 0; r < rows; ++r) {
      const T* __restrict in = src + r * w;
      WriteActivated(dst + r * ld + j0, w - j0, act, [=](int64_t i) {
        return in[j0 + i] * s[j0 + i] + b[j0 + i];
      });
    }
  }

  BatchNorm2dAttrs attrs_;
  Buffer folded_;  // scale[channels], then shift[channels], of attrs_.dtype
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_BATCHNORM2D_SCALE_SHIFT_KERNEL_H_
