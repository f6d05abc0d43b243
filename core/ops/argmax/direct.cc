// argmax / argmin "direct": the input viewed as [outer, size, inner] around
// the axis. A block of up to kLanes inner positions at a time keeps its best
// values and their indices in arrays on the stack and walks the axis, each
// step a contiguous loop over the block that the compiler vectorises (a
// compare and two selects). A search along the last axis (inner 1, the
// classifier's argmax over logits) is one scalar walk per row. Blocks are
// split over OpenMP threads when there is enough to search.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/argmax/argmax.h"
#include "core/ops/checks.h"
#include "core/ops/function_kernel.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelElements = 1 << 15;
constexpr int64_t kLanes = 256;

// Whether v replaces the best value so far, b. A NaN replaces a number;
// with `last`, ties and a later NaN replace too.
template <bool kLargest, typename T>
inline bool Better(T v, T b, bool last) {
  if constexpr (std::is_floating_point_v<T>) {
    if (b != b) return last && v != v;
    if (v != v) return true;
  }
  if (last) return kLargest ? v >= b : v <= b;
  return kLargest ? v > b : v < b;
}

template <bool kLargest, typename T>
void Search(const ArgExtremeAttrs<kLargest>& attrs, const Tensor& input,
            const Tensor& output) {
  const Shape& shape = input.shape;
  const int64_t axis = DimOfAxis(attrs.axis, shape);
  const int64_t outer = DimsProduct(shape, 0, axis);
  const int64_t size = shape[axis];  // > 0 (OutputShape)
  const int64_t inner = DimsProduct(shape, axis + 1, input.rank());
  const T* x = input.data_as<const T>();
  int64_t* y = output.data_as<int64_t>();
  const bool last = attrs.select_last_index;
  const int64_t blocks = (inner + kLanes - 1) / kLanes;
  const bool parallel =
      outer * blocks > 1 && input.numel() >= kParallelElements;
  ParallelFor(0, outer * blocks, parallel, [&](int64_t item) {
    const int64_t o = item / blocks;
    const int64_t c0 = item % blocks * kLanes;
    const int64_t width = std::min(kLanes, inner - c0);
    const T* xo = x + o * size * inner + c0;
    int64_t* yo = y + o * inner + c0;
    if (width == 1) {
      T best = xo[0];
      int64_t index = 0;
      for (int64_t i = 1; i < size; ++i) {
        const T v = xo[i * inner];
        if (Better<kLargest>(v, best, last)) {
          best = v;
          index = i;
        }
      }
      yo[0] = index;
      return;
    }
    T best[kLanes];
    for (int64_t c = 0; c < width; ++c) {
      best[c] = xo[c];
      yo[c] = 0;
    }
    for (int64_t i = 1; i < size; ++i) {
      const T* xi = xo + i * inner;
      for (int64_t c = 0; c < width; ++c) {
        const bool take = Better<kLargest>(xi[c], best[c], last);
        best[c] = take ? xi[c] : best[c];
        yo[c] = take ? i : yo[c];
      }
    }
  });
}

template <bool kLargest>
void Direct(const ArgExtremeAttrs<kLargest>& attrs, const Tensor& input,
            const Tensor& output) {
  switch (input.dtype) {
    case DType::kFloat32:
      return Search<kLargest, float>(attrs, input, output);
    case DType::kFloat64:
      return Search<kLargest, double>(attrs, input, output);
    case DType::kInt64:
      return Search<kLargest, int64_t>(attrs, input, output);
    default:
      Fail(ErrorKind::kDType, ArgExtremeAttrs<kLargest>::kOp,
           " takes float32, float64 or int64, got ", Name(input.dtype));
  }
}

AI3_REGISTER_ALGORITHM(ArgmaxAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<ArgmaxAttrs, Direct<true>>);
AI3_REGISTER_ALGORITHM(ArgminAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<ArgminAttrs, Direct<false>>);

}  // namespace
}  // namespace ai3
