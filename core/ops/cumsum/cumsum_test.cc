// cumsum against a naive sum over shapes and axes (negative ones), with
// exclusive and reverse, in float32, float64 and int64 (with a sum that
// wraps); then the errors.
#include <cmath>
#include <cstdint>
#include <limits>

#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/cumsum/cumsum.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

template <typename T>
DType DTypeOf() {
  if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  return sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
}

// The naive sum of x's elements j along the axis that element i takes.
template <typename T>
T Expected(const std::vector<T>& x, const Shape& in, int axis, int64_t i,
           bool exclusive, bool reverse) {
  int64_t inner = 1;
  for (size_t d = axis + 1; d < in.size(); ++d) inner *= in[d];
  const int64_t pos = i / inner % in[axis];
  const int64_t base = i - pos * inner;
  uint64_t sum = 0;  // (int64 wraps)
  T fsum = 0;        // summed in the scan's order, as the kernel rounds
  for (int64_t step = 0; step < in[axis]; ++step) {
    const int64_t j = reverse ? in[axis] - 1 - step : step;
    const bool takes = reverse ? (exclusive ? j > pos : j >= pos)
                               : (exclusive ? j < pos : j <= pos);
    if (!takes) continue;
    sum += static_cast<uint64_t>(x[base + j * inner]);
    fsum += x[base + j * inner];
  }
  if constexpr (std::is_integral_v<T>) return static_cast<T>(sum);
  return fsum;
}

template <typename T>
void Case(const Shape& in, int64_t axis, bool exclusive, bool reverse,
          std::vector<T> x = {}) {
  if (x.empty()) {
    for (double v : testing::RandomVector(NumElements(in), 5)) {
      x.push_back(static_cast<T>(std::is_integral_v<T> ? v * 100 : v));
    }
  }
  CumsumAttrs a;
  a.axis = axis;
  a.exclusive = exclusive;
  a.reverse = reverse;
  Layer<CumsumAttrs> layer("c", a, {}, "direct");
  Tensor xt{x.data(), DTypeOf<T>(), in};
  std::vector<T> y(x.size(), T(-1));
  layer.Forward(xt, Tensor{y.data(), DTypeOf<T>(), layer.OutputShape(xt)});
  const int d = static_cast<int>(axis < 0 ? axis + in.size() : axis);
  bool ok = true;
  for (int64_t i = 0; i < NumElements(in); ++i) {
    const T want = Expected(x, in, d, i, exclusive, reverse);
    if constexpr (std::is_integral_v<T>) {
      ok &= y[i] == want;
    } else {
      ok &= std::abs(y[i] - want) <= 1e-5 * (1 + std::abs(want));
    }
  }
  Check(ok, "cumsum " + ToString(in) + " axis " + std::to_string(axis) +
                (exclusive ? " exclusive" : "") + (reverse ? " reverse" : "") +
                " " + Name(DTypeOf<T>()));
}

}  // namespace

int Main() {
  int ran = 0;
  for (bool exclusive : {false, true}) {
    for (bool reverse : {false, true}) {
      auto all = [&](const Shape& s, int64_t axis) {
        Case<float>(s, axis, exclusive, reverse);
        Case<double>(s, axis, exclusive, reverse);
        Case<int64_t>(s, axis, exclusive, reverse);
        ran += 3;
      };
      for (const auto& [shape, axis] : testing::AxisCases()) all(shape, axis);
      all({2, 4096}, -1);
    }
  }
  // An int64 sum past the maximum wraps, as torch's does.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Case<int64_t>({3}, 0, false, false, {kMax, 1, 1});
  ++ran;
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  CumsumAttrs far;
  far.axis = 2;
  Layer<CumsumAttrs> layer("c", far, {}, "direct");
  ExpectError("axis", ErrorKind::kShape,
              "cumsum layer 'c' (direct): axis 2 is out of range",
              [&] { layer.OutputShape(xt); });
  std::vector<uint8_t> flags(6);
  Tensor bt{flags.data(), DType::kBool, {2, 3}};
  Layer<CumsumAttrs> first("c", CumsumAttrs{}, {}, "direct");
  ExpectError("dtype", ErrorKind::kDType,
              "cumsum takes float32, float64 or int64",
              [&] { first.OutputShape(bt); });
  Tensor scalar{x.data(), DType::kFloat32, {}};
  ExpectError("scalar", ErrorKind::kShape, "rank >= 1",
              [&] { first.OutputShape(scalar); });
  return testing::Summary("cumsum", ran);
}

}  // namespace ai3
