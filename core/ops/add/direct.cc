// add "direct": threads take contiguous blocks of the output; within a
// block the first two inputs are summed in one pass and each further input
// is added in another, so a block stays in L1 across the passes and every
// inner loop is a plain vectorisable stream.
#include <algorithm>
#include <cstdint>

#include "core/ops/add/add.h"
#include "core/parallel.h"

namespace ai3 {
namespace {

// Below this many elements threads cost more than they save.
constexpr int64_t kParallelThreshold = 1 << 15;
// Elements per block: 16 KiB of floats, small enough for L1 with inputs.
constexpr int64_t kBlock = 4096;

template <typename T>
void AddN(const T* const* x, int count, int64_t n, T* y) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  ParallelFor(0, blocks, n >= kParallelThreshold, [&](int64_t b) {
    const int64_t begin = b * kBlock;
    const int64_t len = std::min(kBlock, n - begin);
    T* yb = y + begin;
    const T* x0 = x[0] + begin;
    if (count == 1) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) yb[i] = x0[i];
      return;
    }
    const T* x1 = x[1] + begin;
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) yb[i] = x0[i] + x1[i];
    for (int k = 2; k < count; ++k) {
      const T* xk = x[k] + begin;
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) yb[i] += xk[i];
    }
  });
}

template <typename T>
void AddInPlaceOf(T* y, const T* r, int64_t n, bool relu) {
  // Threads take contiguous ranges, whose ends the thread that wrote them
  // most likely holds in cache.
  ParallelRanges(0, n, n >= kParallelThreshold, [=](int64_t lo, int64_t hi) {
    T* __restrict yp = y;
    const T* __restrict rp = r;
    if (relu) {
      // v < 0 ? 0 : v keeps NaN as NaN, like the relu layer.
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) {
        const T v = yp[i] + rp[i];
        yp[i] = v < T(0) ? T(0) : v;
      }
    } else {
#pragma omp simd
      for (int64_t i = lo; i < hi; ++i) yp[i] += rp[i];
    }
  });
}

}  // namespace

void AddForward(const float* const* x, int count, int64_t n, float* y) {
  AddN(x, count, n, y);
}

void AddForward(const double* const* x, int count, int64_t n, double* y) {
  AddN(x, count, n, y);
}

void AddInPlace(float* y, const float* r, int64_t n, bool relu) {
  AddInPlaceOf(y, r, n, relu);
}

void AddInPlace(double* y, const double* r, int64_t n, bool relu) {
  AddInPlaceOf(y, r, n, relu);
}

}  // namespace ai3
