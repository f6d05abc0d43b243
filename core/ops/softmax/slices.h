// How softmax and log_softmax walk their input, viewed as [outer, axis,
// inner]: the task split both share, so each keeps only its own math.
//   inner == 1 (the last axis, the common case): one task per contiguous
//     row; `row(x, y)` (SliceRow) runs its passes along it, vectorised.
//   inner > 1: one task per (outer, block of up to kSliceBlock inner
//     positions); `block(x, y, width)` (SliceBlock) walks the axis with the
//     block's positions (x[k * inner + i], i < width) as the vectorised
//     loop.
// Tasks are split over OpenMP threads when there is enough work.
// SliceKernel is the whole "direct" kernel of such an op from its Math:
// the split, the passes, the dtype dispatch and the exp range live here
// once.
#ifndef AI3_CORE_OPS_SOFTMAX_SLICES_H_
#define AI3_CORE_OPS_SOFTMAX_SLICES_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/layer.h"
#include "core/math/dispatch.h"
#include "core/ops/backward.h"
#include "core/ops/sigmoid/exp.h"
#include "core/ops/softmax/softmax.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {

// Inner positions per task when the axis is not the last (the block
// functions keep per-position running values of this size on the stack).
constexpr int64_t kSliceBlock = 256;

// The split by element offset: row(offset) for a row starting there,
// block(offset, width) for a block (the gradients' kernels, which read
// several tensors, use this form).
template <typename Row, typename Block>
void ForEachSoftmaxSliceAt(const SoftmaxAttrs::Split& s, Row row, Block block) {
  // Below this many elements threads cost more than they save.
  constexpr int64_t kParallelThreshold = 1 << 13;
  if (s.axis == 0) return;
  const int64_t slice = s.axis * s.inner;
  const bool parallel = s.outer * slice >= kParallelThreshold;
  if (s.inner == 1) {
    ParallelFor(0, s.outer, parallel, [&](int64_t o) { row(o * s.axis); });
    return;
  }
  const int64_t blocks = (s.inner + kSliceBlock - 1) / kSliceBlock;
  ParallelFor(0, s.outer * blocks, parallel, [&](int64_t t) {
    const int64_t i0 = (t % blocks) * kSliceBlock;
    block((t / blocks) * slice + i0, std::min(kSliceBlock, s.inner - i0));
  });
}

template <typename T, typename Row, typename Block>
void ForEachSoftmaxSlice(const SoftmaxAttrs::Split& s, const T* x, T* y,
                         Row row, Block block) {
  ForEachSoftmaxSliceAt(
      s, [&](int64_t at) { row(x + at, y + at); },
      [&](int64_t at, int64_t width) { block(x + at, y + at, width); });
}

// The three passes over one slice, the same for softmax and log_softmax but
// for what `Math` does with them:
//   1. m = the max over the axis;
//   2. sum = the sum of e = exp(x - m), Math::Store(y, e) for each e;
//   3. c = Math::Finish(m, sum) per slice, Math::Out(x, y, c) per element.
// `Math` has, for T float and double,
//   template <typename T> static void Store(T& y, T e);
//   template <typename T> static T Finish(T max, T sum);
//   template <typename T> static void Out(T x, T& y, T c);

// Along a contiguous row of `len` elements.
template <class Math, typename T>
void SliceRow(const T* __restrict x, T* __restrict y, int64_t len,
              const vmath::ExpRange<T>& range) {
  T m = x[0];
#pragma omp simd reduction(max : m)
  for (int64_t k = 0; k < len; ++k) m = std::max(m, x[k]);
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t k = 0; k < len; ++k) {
    const T e = vmath::Exp(x[k] - m, range);
    Math::Store(y[k], e);
    sum += e;
  }
  const T c = Math::Finish(m, sum);
#pragma omp simd
  for (int64_t k = 0; k < len; ++k) Math::Out(x[k], y[k], c);
}

// Over a block's `width` interleaved slices (x[k * inner + i], i < width,
// width <= kSliceBlock), with the block's positions as the vectorised loop.
template <class Math, typename T>
void SliceBlock(const T* x, T* y, int64_t len, int64_t inner, int64_t width,
                const vmath::ExpRange<T>& range) {
  T m[kSliceBlock], sum[kSliceBlock];
  for (int64_t i = 0; i < width; ++i) {
    m[i] = x[i];
    sum[i] = 0;
  }
  for (int64_t k = 1; k < len; ++k) {
    const T* __restrict xk = x + k * inner;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i) m[i] = std::max(m[i], xk[i]);
  }
  for (int64_t k = 0; k < len; ++k) {
    const T* __restrict xk = x + k * inner;
    T* __restrict yk = y + k * inner;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i) {
      const T e = vmath::Exp(xk[i] - m[i], range);
      Math::Store(yk[i], e);
      sum[i] += e;
    }
  }
  T* c = sum;  // each slice's constant replaces its sum
  for (int64_t i = 0; i < width; ++i) c[i] = Math::Finish(m[i], sum[i]);
  for (int64_t k = 0; k < len; ++k) {
    const T* __restrict xk = x + k * inner;
    T* __restrict yk = y + k * inner;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i) Math::Out(xk[i], yk[i], c[i]);
  }
}

// The "direct" kernel of an op from its `Math` (above); `Attrs` has a
// SplitOf(shape) (SoftmaxAttrs and those deriving it).
template <class Attrs, class Math>
class SliceKernel : public Kernel {
 public:
  explicit SliceKernel(const Attrs& attrs) : attrs_(attrs) {}

  void Run(const Tensor& input, const Tensor& output, void*) override {
    const SoftmaxAttrs::Split s = attrs_.SplitOf(input.shape);
    DispatchFloat(input.dtype, [&](auto zero) {
      using T = decltype(zero);
      const vmath::ExpRange<T> range;  // a variable, not literals: see exp.h
      ForEachSoftmaxSlice(
          s, input.data_as<const T>(), output.data_as<T>(),
          [&](const T* xr, T* yr) { SliceRow<Math>(xr, yr, s.axis, range); },
          [&](const T* xb, T* yb, int64_t width) {
            SliceBlock<Math>(xb, yb, s.axis, s.inner, width, range);
          });
    });
  }

 private:
  Attrs attrs_;
};

// The gradients (softmax_backward_data, log_softmax_backward_data): per
// slice, c = the sum over the axis of Grad::Term(dy, y), then dx =
// Grad::Out(dy, y, c) per element. `Grad` has, for T float and double,
//   template <typename T> static T Term(T dy, T y, const vmath::ExpRange<T>&);
//   template <typename T>
//   static T Out(T dy, T y, T c, const vmath::ExpRange<T>&);

template <class Grad, typename T>
void SliceGradRow(const T* __restrict dy, const T* __restrict y,
                  T* __restrict dx, int64_t len,
                  const vmath::ExpRange<T>& range) {
  T c = 0;
#pragma omp simd reduction(+ : c)
  for (int64_t k = 0; k < len; ++k) c += Grad::Term(dy[k], y[k], range);
#pragma omp simd
  for (int64_t k = 0; k < len; ++k) dx[k] = Grad::Out(dy[k], y[k], c, range);
}

template <class Grad, typename T>
void SliceGradBlock(const T* dy, const T* y, T* dx, int64_t len, int64_t inner,
                    int64_t width, const vmath::ExpRange<T>& range) {
  T c[kSliceBlock];
  for (int64_t i = 0; i < width; ++i) c[i] = 0;
  for (int64_t k = 0; k < len; ++k) {
    const T* __restrict dyk = dy + k * inner;
    const T* __restrict yk = y + k * inner;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i) {
      c[i] += Grad::Term(dyk[i], yk[i], range);
    }
  }
  for (int64_t k = 0; k < len; ++k) {
    const T* __restrict dyk = dy + k * inner;
    const T* __restrict yk = y + k * inner;
    T* __restrict dxk = dx + k * inner;
#pragma omp simd
    for (int64_t i = 0; i < width; ++i) {
      dxk[i] = Grad::Out(dyk[i], yk[i], c[i], range);
    }
  }
}

// The "direct" kernel of such a gradient from its `Grad` (above): the
// inputs [dy, x, y] (x unread: both gradients follow from y), dx the
// output, split as the forward.
template <class Attrs, class Grad>
class SliceGradKernel : public MultiInputKernel {
 public:
  explicit SliceGradKernel(const Attrs& attrs) : attrs_(attrs) {}

  void RunInputs(const std::vector<Tensor>& inputs, const Tensor& output,
                 void*) override {
    const SoftmaxAttrs::Split s = attrs_.SplitOf(output.shape);
    DispatchFloat(output.dtype, [&](auto zero) {
      using T = decltype(zero);
      const vmath::ExpRange<T> range;  // a variable, not literals: see exp.h
      const T* dy = inputs[kGradOutput].data_as<const T>();
      const T* y = inputs[kForwardOutput].data_as<const T>();
      T* dx = output.data_as<T>();
      ForEachSoftmaxSliceAt(
          s,
          [&](int64_t at) {
            SliceGradRow<Grad>(dy + at, y + at, dx + at, s.axis, range);
          },
          [&](int64_t at, int64_t width) {
            SliceGradBlock<Grad>(dy + at, y + at, dx + at, s.axis, s.inner,
                                 width, range);
          });
    });
  }

 private:
  Attrs attrs_;
};

}  // namespace ai3

#endif  // AI3_CORE_OPS_SOFTMAX_SLICES_H_
