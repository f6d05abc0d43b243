// How every reduction walks its input (mean.h), forward (direct.cc) and
// backward (backward_direct.cc): the input's dimensions merged into
// alternating blocks of kept and reduced ones (size-1 dims dropped), e.g.
// NCHW over (H, W) is [kept NC, reduced HW] and NHWC over (H, W) is [kept
// N, reduced HW, kept C]. The input is read as rows of its innermost
// block; OutputOffset says which output a row's first element belongs to,
// and FoldInto folds the rows into their outputs (the reductions; tile's and
// expand's gradients, which sum dy over the copies of each element).
#ifndef AI3_CORE_OPS_MEAN_REDUCE_WALK_H_
#define AI3_CORE_OPS_MEAN_REDUCE_WALK_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/ops/mean/mean.h"
#include "core/parallel.h"
#include "core/tensor.h"

namespace ai3 {
namespace reduce {

constexpr int kMaxBlocks = 32;
// Inputs past this many elements fold on OpenMP threads.
constexpr int64_t kParallelElements = 1 << 15;

struct Blocks {
  int count = 0;
  int64_t size[kMaxBlocks];
  bool reduced[kMaxBlocks];
  int64_t out_stride[kMaxBlocks];  // 0 for reduced blocks
  int64_t reduce_count = 1;        // elements folded per output
};

// The caller checks shape.size() <= kMaxBlocks.
inline Blocks MakeBlocks(const Shape& shape, const std::vector<bool>& reduced) {
  Blocks b;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (reduced[i]) b.reduce_count *= shape[i];
    if (shape[i] == 1) continue;
    if (b.count > 0 && b.reduced[b.count - 1] == reduced[i]) {
      b.size[b.count - 1] *= shape[i];
      continue;
    }
    b.size[b.count] = shape[i];
    b.reduced[b.count] = reduced[i];
    ++b.count;
  }
  if (b.count == 0) {  // one element
    b.size[0] = 1;
    b.reduced[0] = false;
    b.count = 1;
  }
  int64_t s = 1;
  for (int i = b.count - 1; i >= 0; --i) {
    b.out_stride[i] = b.reduced[i] ? 0 : s;
    if (!b.reduced[i]) s *= b.size[i];
  }
  return b;
}

// The output offset of row `row` of blocks [first, count - 1) (rows of the
// innermost block, numbered from the start of block `first`): a reduced
// innermost block folds the whole row into that output, a kept one spreads
// it over the outputs from there on.
inline int64_t OutputOffset(const Blocks& b, int first, int64_t row) {
  int64_t off = 0;
  for (int i = b.count - 2; i >= first; --i) {
    off += (row % b.size[i]) * b.out_stride[i];
    row /= b.size[i];
  }
  return off;
}

// What a reduction folds: acc = Combine(acc, Map(x, shift)) from Init(),
// then y = Finish(acc, count, shift). `shift` is log_sum_exp's maximum (0
// for the others).
template <Reduction R, typename T>
struct Fold {
  static constexpr bool kSum = R == Reduction::kMean || R == Reduction::kSum ||
                               R == Reduction::kL1 || R == Reduction::kL2 ||
                               R == Reduction::kSumSquare ||
                               R == Reduction::kLogSumExp;
  static T Init() {
    if constexpr (R == Reduction::kProd) return T(1);
    if constexpr (R == Reduction::kMax) {
      return -std::numeric_limits<T>::infinity();
    }
    if constexpr (R == Reduction::kMin) {
      return std::numeric_limits<T>::infinity();
    }
    return T(0);
  }
  static T Map(T x, T shift) {
    (void)shift;
    if constexpr (R == Reduction::kL1) return std::fabs(x);
    if constexpr (R == Reduction::kL2 || R == Reduction::kSumSquare) {
      return x * x;
    }
    if constexpr (R == Reduction::kLogSumExp) return std::exp(x - shift);
    return x;
  }
  // NaN wins in max and min: a compare with NaN is false.
  static T Combine(T acc, T v) {
    if constexpr (R == Reduction::kProd) return acc * v;
    if constexpr (R == Reduction::kMax) return acc != acc || acc > v ? acc : v;
    if constexpr (R == Reduction::kMin) return acc != acc || acc < v ? acc : v;
    return acc + v;
  }
  static T Finish(T acc, T scale, T shift) {
    if constexpr (R == Reduction::kMean) return acc * scale;
    if constexpr (R == Reduction::kL2) return std::sqrt(acc);
    if constexpr (R == Reduction::kLogSumExp) return shift + std::log(acc);
    return acc;
  }
};

// Folds the rows of blocks [first, count) starting at x into acc (offsets
// relative to the outermost index handled by the caller); shift (log_sum_exp
// only, else null) is read at acc's offsets.
template <Reduction R, typename T>
void Accumulate(const Blocks& b, int first, const T* x, T* acc,
                const T* shift) {
  using F = Fold<R, T>;
  const int64_t inner = b.size[b.count - 1];
  int64_t rows = 1;
  for (int i = first; i < b.count - 1; ++i) rows *= b.size[i];
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t off = reduce::OutputOffset(b, first, r);
    const T* __restrict xr = x + r * inner;
    T* __restrict ar = acc + off;
    if (b.reduced[b.count - 1]) {
      const T s = shift != nullptr ? shift[off] : T(0);
      T v = F::Init();
      if constexpr (F::kSum) {
#pragma omp simd reduction(+ : v)
        for (int64_t i = 0; i < inner; ++i) v += F::Map(xr[i], s);
      } else if constexpr (R == Reduction::kProd) {
#pragma omp simd reduction(* : v)
        for (int64_t i = 0; i < inner; ++i) v *= xr[i];
      } else {
        for (int64_t i = 0; i < inner; ++i) v = F::Combine(v, xr[i]);
      }
      ar[0] = F::Combine(ar[0], v);
    } else if constexpr (R == Reduction::kLogSumExp) {
      const T* __restrict sr = shift + off;
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) ar[i] += F::Map(xr[i], sr[i]);
    } else {
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) {
        ar[i] = F::Combine(ar[i], F::Map(xr[i], T(0)));
      }
    }
  }
}

// acc = the fold of x over the reduced blocks (from Init()), outputs split
// over threads by the outermost kept block.
template <Reduction R, typename T>
void FoldInto(const Blocks& b, const T* x, T* acc, const T* shift,
              int64_t in_numel, int64_t out_numel) {
  const T init = Fold<R, T>::Init();
  for (int64_t i = 0; i < out_numel; ++i) acc[i] = init;
  if (in_numel == 0) return;
  if (!b.reduced[0] && b.count > 1) {
    const int64_t per = in_numel / b.size[0];
    ParallelFor(0, b.size[0], in_numel >= kParallelElements, [&](int64_t o) {
      const int64_t at = o * b.out_stride[0];
      Accumulate<R, T>(b, 1, x + o * per, acc + at,
                       shift != nullptr ? shift + at : nullptr);
    });
  } else {
    Accumulate<R, T>(b, 0, x, acc, shift);
  }
}

}  // namespace reduce
}  // namespace ai3

#endif  // AI3_CORE_OPS_MEAN_REDUCE_WALK_H_
