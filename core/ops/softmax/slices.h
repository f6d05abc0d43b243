// How softmax and log_softmax walk their input, viewed as [outer, axis,
// inner]: the task split both share, so each keeps only its own math.
//   inner == 1 (the last axis, the common case): one task per contiguous
//     row; `row(x, y)` runs its passes along it, vectorised.
//   inner > 1: one task per (outer, block of up to kSliceBlock inner
//     positions); `block(x, y, width)` walks the axis with the block's
//     positions (x[k * inner + i], i < width) as the vectorised loop.
// Tasks are split over OpenMP threads when there is enough work.
#ifndef AI3_CORE_OPS_SOFTMAX_SLICES_H_
#define AI3_CORE_OPS_SOFTMAX_SLICES_H_

#include <algorithm>
#include <cstdint>

#include "core/ops/softmax/softmax.h"
#include "core/parallel.h"

namespace ai3 {

// Inner positions per task when the axis is not the last (the block
// functions keep per-position running values of this size on the stack).
constexpr int64_t kSliceBlock = 256;

template <typename T, typename Row, typename Block>
void ForEachSoftmaxSlice(const SoftmaxAttrs::Split& s, const T* x, T* y,
                         Row row, Block block) {
  // Below this many elements threads cost more than they save.
  constexpr int64_t kParallelThreshold = 1 << 13;
  if (s.axis == 0) return;
  const int64_t slice = s.axis * s.inner;
  const bool parallel = s.outer * slice >= kParallelThreshold;
  if (s.inner == 1) {
    ParallelFor(0, s.outer, parallel,
                [&](int64_t o) { row(x + o * s.axis, y + o * s.axis); });
    return;
  }
  const int64_t blocks = (s.inner + kSliceBlock - 1) / kSliceBlock;
  ParallelFor(0, s.outer * blocks, parallel, [&](int64_t t) {
    const int64_t o = t / blocks;
    const int64_t i0 = (t % blocks) * kSliceBlock;
    block(x + o * slice + i0, y + o * slice + i0,
          std::min(kSliceBlock, s.inner - i0));
  });
}

}  // namespace ai3

#endif  // AI3_CORE_OPS_SOFTMAX_SLICES_H_
