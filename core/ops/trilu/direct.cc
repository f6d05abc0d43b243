// trilu "direct": per matrix row, the kept columns are one contiguous run
// ([max(0, i + k), cols) upper, [0, min(cols, i + k + 1)) lower), moved
// with memmove (the graph may run it in place), and the rest is set to zero
// with memset; any dtype, by its element size (a zero of every dtype ai3
// has is all-zero bytes). Rows are split over OpenMP threads when there is
// enough to copy.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/layer.h"
#include "core/ops/function_kernel.h"
#include "core/ops/trilu/trilu.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelBytes = int64_t{1} << 18;

void Direct(const TriluAttrs& attrs, const Tensor& input,
            const Tensor& output) {
  const int64_t rank = input.rank();
  const int64_t rows = input.shape[rank - 2], cols = input.shape[rank - 1];
  const int64_t size = SizeOf(input.dtype);
  const int64_t count = rows == 0 ? 0 : input.numel() / cols;  // every row
  if (cols == 0 || count == 0) return;
  const auto* x = static_cast<const char*>(input.data);
  auto* y = static_cast<char*>(output.data);
  // The diagonal offset, clamped so that i + k cannot overflow.
  const int64_t k = std::clamp<int64_t>(attrs.k, -cols - rows, cols + rows);
  ParallelRanges(0, count, count * cols * size >= kParallelBytes,
                 [=](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r) {
                     const int64_t i = r % rows;
                     const int64_t begin =
                         attrs.upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
                     const int64_t end =
                         attrs.upper ? cols
                                     : std::clamp<int64_t>(i + k + 1, 0, cols);
                     const char* xr = x + r * cols * size;
                     char* yr = y + r * cols * size;
                     std::memset(yr, 0, begin * size);
                     std::memmove(yr + begin * size, xr + begin * size,
                                  (end - begin) * size);
                     std::memset(yr + end * size, 0, (cols - end) * size);
                   }
                 });
}

AI3_REGISTER_ALGORITHM(TriluAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<TriluAttrs, Direct>);

}  // namespace
}  // namespace ai3
