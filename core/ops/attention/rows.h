// Row-wise pieces every attention algorithm shares: turning a row of raw
// scores q_i . k_j into masked scores, and a softmax that gives zeros (not
// NaN) for a row whose keys are all masked, as torch's SDPA does.
#ifndef AI3_CORE_OPS_ATTENTION_ROWS_H_
#define AI3_CORE_OPS_ATTENTION_ROWS_H_

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/math/vectors.h"
#include "core/ops/attention/attention.h"
#include "core/ops/sigmoid/exp.h"
#include "core/parallel.h"

namespace ai3 {
namespace attention {

// Scores s[0, cols) of query row i (of batch entry n) against keys
// j0 .. j0 + cols - 1, already scaled: adds the mask and hides the keys a
// causal layer does not see (j > i) with -inf.
template <typename T>
inline void MaskScores(const AttentionGeometry& g, const T* mask, int64_t n,
                       int64_t i, int64_t j0, int64_t cols, T* __restrict s) {
  if (g.has_mask) {
    const T* __restrict m = mask + g.mask_offsets[n] + i * g.mask_row_stride +
                            j0 * g.mask_col_stride;
    if (g.mask_col_stride != 0) {
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) s[j] += m[j];
    } else {  // one value for every key of the row
      const T value = m[0];
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) s[j] += value;
    }
  }
  if (g.causal) {
    const T hidden = -std::numeric_limits<T>::infinity();
    for (int64_t j = std::max<int64_t>(0, i + 1 - j0); j < cols; ++j) {
      s[j] = hidden;
    }
  }
}

// op folded over s[0, len) from `identity`, in four vectors of partial
// results side by side, then their lanes, then the tail. GCC vectorises
// neither reduction below on its own: `omp simd reduction(max)` compiled to
// one chain of dependent vmaxss (no float max reduction without
// -ffast-math), 15% of flash attention's time at L = 512, and
// `reduction(+)` kept its partial sums on the stack, a store and reload per
// iteration. `op` takes a pair of scalars or of vectors.
template <typename T, typename Op>
inline T RowReduce(const T* __restrict s, int64_t len, T identity, Op op) {
  using Vec = Vectors<T, 32>;  // these translation units build for AVX2
  using V = typename Vec::V;
  constexpr int64_t kLanes = Vec::kLanes;
  int64_t j = 0;
  T result = identity;
  if (len >= 4 * kLanes) {
    const V start = V{} + identity;
    V acc[4] = {start, start, start, start};
    for (; j + 4 * kLanes <= len; j += 4 * kLanes) {
      for (int64_t u = 0; u < 4; ++u) {
        acc[u] = op(acc[u], Vec::Load(s + j + u * kLanes));
      }
    }
    const V all = op(op(acc[0], acc[1]), op(acc[2], acc[3]));
    for (int64_t l = 0; l < kLanes; ++l) result = op(result, all[l]);
  }
  for (; j < len; ++j) result = op(result, s[j]);
  return result;
}

// The row's largest score (NaNs skipped, like std::max). The order of the
// comparisons differs from a scalar loop's only where +0 and -0 tie, which
// the exp(s - max) that follows cannot tell apart.
template <typename T>
inline T RowMax(const T* __restrict s, int64_t len) {
  return RowReduce(s, len, -std::numeric_limits<T>::infinity(),
                   [](auto m, auto v) { return m < v ? v : m; });
}

// The sum of s[0, len).
template <typename T>
inline T RowSum(const T* __restrict s, int64_t len) {
  return RowReduce(s, len, T(0), [](auto a, auto b) { return a + b; });
}

// s[j] = exp(s[j] - max) in place; returns the sum. `max` must be finite
// or +inf (a -inf max means every key is masked: the caller handles it).
template <typename T>
inline T ExpRow(T* __restrict s, int64_t len, T max,
                const vmath::ExpRange<T>& range) {
  // The range as opaque run-time values: inlined into a caller that built
  // it, GCC would see the constants again and keep Exp's range checks as
  // branches, which do not vectorise (see exp.h).
  vmath::ExpRange<T> opaque = range;
  asm("" : "+x"(opaque.lo), "+x"(opaque.hi));
  // Two loops: the exp here, the sum in RowReduce (one `omp simd
  // reduction(+)` loop kept its partial sums on the stack: 20% of flash
  // attention's time).
#pragma omp simd
  for (int64_t j = 0; j < len; ++j) s[j] = vmath::Exp(s[j] - max, opaque);
  return RowSum(s, len);
}

// Softmax of s[0, len) in place; a row that is all -inf becomes zeros.
template <typename T>
inline void SafeSoftmaxRow(T* __restrict s, int64_t len,
                           const vmath::ExpRange<T>& range) {
  const T max = RowMax(s, len);
  if (max == -std::numeric_limits<T>::infinity()) {
    std::fill(s, s + len, T(0));
    return;
  }
  const T inv = T(1) / ExpRow(s, len, max, range);
#pragma omp simd
  for (int64_t j = 0; j < len; ++j) s[j] *= inv;
}

// Scaled scores of rows i0 .. i0 + rows - 1 of batch entry n against keys
// 0 .. cols - 1 (row r at p + r * cols) -> attention probabilities, in
// place. Threads over rows (call from outside a parallel region), unless
// `threaded` is false (a caller that runs batch entries on its threads).
template <typename T>
void ScoresToProbabilities(const AttentionGeometry& g, const T* mask, int64_t n,
                           int64_t i0, int64_t rows, int64_t cols, T* p,
                           bool threaded = true) {
  const vmath::ExpRange<T> range;
  ParallelFor(0, rows, threaded && rows * cols >= (1 << 14), [&](int64_t r) {
    T* row = p + r * cols;
    MaskScores(g, mask, n, i0 + r, 0, cols, row);
    SafeSoftmaxRow(row, cols, range);
  });
}

}  // namespace attention
}  // namespace ai3

#endif  // AI3_CORE_OPS_ATTENTION_ROWS_H_
