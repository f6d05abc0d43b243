// concat "direct": a set of row copies, split over the threads in one of two
// ways. Many short rows (NHWC channel concat: one row per pixel, each input
// a few hundred bytes of it): each thread copies a contiguous run of whole
// rows, every input of a row in turn, so a row costs one memcpy per input
// and nothing else. A few long rows (NCHW channel concat at batch 1: one
// row per input) cannot be shared out by row: work items are then (row,
// input, chunk of at most kChunkBytes).
//
// Why not one (row, input, chunk) item for every case, as before: in NHWC
// each item is one short memcpy, and finding its row, input and offset took
// three 64-bit divisions and a call through the loop body per item, which
// cost as much as the copy. Two 32-channel inputs at 8x28x28 took 0.072 ms
// before and 0.019-0.025 after, two 64-channel ones at 1x55x55 0.039 and
// 0.019-0.022 (2-core EPYC); at 8x55x55 (6 MB) memory bounds both.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include <omp.h>

#include "core/ops/concat/concat.h"
#include "core/parallel.h"

namespace ai3 {
namespace {

// Below this many bytes in all one thread copies faster than several.
constexpr int64_t kParallelBytes = int64_t{1} << 18;
// The most bytes one work item copies.
constexpr int64_t kChunkBytes = int64_t{1} << 16;
// Rows are shared out whole when there are at least this many per thread
// (OpenMP's static schedule then evens out the threads' bytes to within a
// row); otherwise the long rows are cut into chunks.
constexpr int64_t kRowsPerThread = 16;

template <typename T>
void ConcatRows(const T* const* x, const int64_t* widths, int count,
                int64_t outer, T* y) {
  int64_t row = 0, widest = 0;
  for (int k = 0; k < count; ++k) {
    row += widths[k];
    widest = std::max(widest, widths[k]);
  }
  const bool parallel =
      outer * row * static_cast<int64_t>(sizeof(T)) >= kParallelBytes;
  const int64_t threads = parallel ? omp_get_max_threads() : 1;
  if (outer >= kRowsPerThread * threads) {
    ParallelRanges(0, outer, parallel, [=](int64_t lo, int64_t hi) {
      for (int64_t o = lo; o < hi; ++o) {
        T* out = y + o * row;
        for (int k = 0; k < count; ++k) {
          if (x[k] != nullptr) {
            std::memcpy(out, x[k] + o * widths[k], widths[k] * sizeof(T));
          }
          out += widths[k];
        }
      }
    });
    return;
  }
  const int64_t chunk = std::max<int64_t>(1, kChunkBytes / sizeof(T));
  const int64_t chunks = std::max<int64_t>(1, (widest + chunk - 1) / chunk);
  const int64_t items = outer * count * chunks;
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
