// The statistics of one normalised row, as layernorm's forward and its
// gradients compute them: the mean, then the variance around it (two
// vectorised passes: no cancellation for rows with a large mean), and
// rstd = 1 / sqrt(var + eps).
#ifndef AI3_CORE_OPS_LAYERNORM_ROW_STATS_KERNEL_H_
#define AI3_CORE_OPS_LAYERNORM_ROW_STATS_KERNEL_H_

#include <cmath>
#include <cstdint>

#include "core/tensor.h"

namespace ai3 {

template <typename T>
struct RowStats {
  T mean, rstd;
};

// kCentered false: rmsnorm's statistics, mean 0 and rstd = 1 / sqrt(mean(x^2)
// + eps).
template <typename T, bool kCentered = true>
RowStats<T> RowStatsOf(const T* __restrict xr, int64_t d, T eps) {
  if constexpr (!kCentered) {
    T sq = 0;
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < d; ++i) sq += xr[i] * xr[i];
    return {T(0), T(1) / std::sqrt(sq / T(d) + eps)};
  }
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < d; ++i) sum += xr[i];
  const T mean = sum / T(d);
  T sq = 0;
#pragma omp simd reduction(+ : sq)
  for (int64_t i = 0; i < d; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
  return {mean, T(1) / std::sqrt(sq / T(d) + eps)};
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_LAYERNORM_ROW_STATS_KERNEL_H_
