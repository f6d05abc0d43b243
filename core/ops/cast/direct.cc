// cast "direct": one loop per (from, to) pair of dtypes, split over threads
// for large inputs.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/math/dispatch.h"
#include "core/ops/cast/cast.h"
#include "core/ops/function_kernel.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr int64_t kParallelElements = 1 << 16;

// x as To, with the conversions of cast.h (no undefined float -> int).
template <typename To, typename From>
To Convert(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_same_v<To, int64_t> &&
                       std::is_floating_point_v<From>) {
    // 2^63 is exact in both float types; [-2^63, 2^63) converts defined.
    constexpr From kLimit = From(9223372036854775808.0);
    if (!(x >= -kLimit && x < kLimit)) {
      return std::numeric_limits<int64_t>::min();
    }
    return static_cast<int64_t>(x);
  } else {
    return static_cast<To>(x);
  }
}

template <typename From, typename To>
void CastAs(const Tensor& input, const Tensor& output) {
  const From* x = input.data_as<const From>();
  To* y = output.data_as<To>();
  const int64_t n = input.numel();
  ParallelRanges(0, n, n >= kParallelElements, [=](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) y[i] = Convert<To>(x[i]);
  });
}

void Direct(const CastAttrs& attrs, const Tensor& input, const Tensor& output) {
  if (input.dtype == attrs.to) {
    std::memcpy(output.data, input.data, input.numel() * SizeOf(input.dtype));
    return;
  }
  DispatchAnyDType(input.dtype, [&](auto from) {
    DispatchAnyDType(attrs.to, [&](auto to) {
      CastAs<decltype(from), decltype(to)>(input, output);
    });
  });
}

AI3_REGISTER_ALGORITHM(CastAttrs, "direct", Device::kCPU,
                       FunctionAlgorithm<CastAttrs, Direct>);

}  // namespace
}  // namespace ai3
