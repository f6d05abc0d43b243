// tile / expand "direct": the output as rows of its innermost dimension;
// each row's source is the input row at (c mod input size) per outer
// dimension, and the row itself is the input row copied once (same size),
// its one element repeated (size 1: expand) or copied repeats times (tile).
// Rows are split over OpenMP threads when the output is large.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/math/dispatch.h"
#include "core/ops/function_kernel.h"
#include "core/ops/tile/tile.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelThreshold = 1 << 15;

template <typename T>
void Repeat(const Shape& in, const Shape& out, const T* x, T* y) {
  const int rank = static_cast<int>(out.size());
  if (rank == 0) {
    y[0] = x[0];
    return;
  }
  const int64_t inner_out = out[rank - 1], inner_in = in[rank - 1];
  const int64_t rows = NumElements(out) / std::max<int64_t>(inner_out, 1);
  if (inner_out == 0 || rows == 0) return;
  int64_t in_stride[16];  // element strides of the input (rank <= 12)
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_stride[d] = s;
    s *= in[d];
  }
  ParallelFor(0, rows, NumElements(out) >= kParallelThreshold,
              [&](int64_t row) {
                int64_t rest = row, src = 0;
                for (int d = rank - 2; d >= 0; --d) {
                  src += (rest % out[d]) % in[d] * in_stride[d];
                  rest /= out[d];
                }
                const T* __restrict xr = x + src;
                T* __restrict yr = y + row * inner_out;
                if (inner_in == 1) {
                  const T v = xr[0];
                  for (int64_t i = 0; i < inner_out; ++i) yr[i] = v;
                } else {
                  for (int64_t at = 0; at < inner_out; at += inner_in) {
                    std::memcpy(yr + at, xr, inner_in * sizeof(T));
                  }
                }
              });
}

void Run(const Tensor& input, const Tensor& output) {
  if (input.numel() == 0 || output.numel() == 0) return;
  const Shape in = AlignedInputShape(input.shape, output.shape.size());
  DispatchAnyDType(input.dtype, [&](auto zero) {
    using T = decltype(zero);
    Repeat<T>(in, output.shape, input.data_as<const T>(), output.data_as<T>());
  });
}

void Tile(const TileAttrs&, const Tensor& input, const Tensor& output) {
  Run(input, output);
}
void Expand(const ExpandAttrs&, const Tensor& input, const Tensor& output) {
  Run(input, output);
}

AI3_REGISTER_ALGORITHM(TileAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<TileAttrs, Tile>);
AI3_REGISTER_ALGORITHM(ExpandAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<ExpandAttrs, Expand>);

}  // namespace
}  // namespace ai3
