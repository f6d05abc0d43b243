// concat "direct": a set of row copies. Work items are (row, input, chunk)
// so that threads find work both for many short rows (NHWC channel concat:
// one row per pixel) and for a few long ones (NCHW channel concat at batch
// 1: one row per input).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/ops/concat/concat.h"
#include "core/parallel.h"

namespace ai3 {
namespace {

// Below this many bytes in all one thread copies faster than several.
constexpr int64_t kParallelBytes = int64_t{1} << 18;
// The most bytes one work item copies.
constexpr int64_t kChunkBytes = int64_t{1} << 16;

template <typename T>
void ConcatRows(const T* const* x, const int64_t* widths, int count,
                int64_t outer, T* y) {
  int64_t row = 0, widest = 0;
  for (int k = 0; k < count; ++k) {
    row += widths[k];
    widest = std::max(widest, widths[k]);
  }
  const int64_t chunk = std::max<int64_t>(1, kChunkBytes / sizeof(T));
  const int64_t chunks = std::max<int64_t>(1, (widest + chunk - 1) / chunk);
  const int64_t items = outer * count * chunks;
  const bool parallel =
      outer * row * static_cast<int64_t>(sizeof(T)) >= kParallelBytes;
  ParallelFor(0, items, parallel, [&](int64_t item) {
    const int64_t j = item % chunks;
    const int k = static_cast<int>((item / chunks) % count);
    const int64_t o = item / chunks / count;
    const int64_t begin = j * chunk;
    if (x[k] == nullptr || begin >= widths[k]) return;
    const int64_t len = std::min(chunk, widths[k] - begin);
    int64_t offset = 0;  // count is small (a handful of branches)
    for (int q = 0; q < k; ++q) offset += widths[q];
    std::memcpy(y + o * row + offset + begin, x[k] + o * widths[k] + begin,
                len * sizeof(T));
  });
}

}  // namespace

void ConcatForward(const float* const* x, const int64_t* widths, int count,
                   int64_t outer, float* y) {
  ConcatRows(x, widths, count, outer, y);
}

void ConcatForward(const double* const* x, const int64_t* widths, int count,
                   int64_t outer, double* y) {
  ConcatRows(x, widths, count, outer, y);
}

}  // namespace ai3
