// cast between every pair of float32, float64, int64 and bool against the
// conversions cast.h states (truncation toward zero; NaN, infinities and
// values past int64's range to INT64_MIN; nonzero to true), on inputs that
// cover them and large enough to split over threads; then the errors.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/cast/cast.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;
using testing::Store;

// The inputs: the special values first, then a ramp through zero.
template <typename T>
std::vector<Store<T>> Inputs(int64_t n) {
  std::vector<Store<T>> v;
  if constexpr (std::is_floating_point_v<T>) {
    const T inf = std::numeric_limits<T>::infinity();
    v = {T(2.7), T(-2.7), T(0.5),  T(-0.5),  T(-0.0),   T(std::nan("")),
         inf,    -inf,    T(1e19), T(-1e19), T(9.2e18), T(-9.2e18)};
  } else if constexpr (std::is_same_v<T, int64_t>) {
    v = {std::numeric_limits<int64_t>::max(),
         std::numeric_limits<int64_t>::min(), 0, -1, 1};
  } else {
    v = {true, false};
  }
  for (int64_t i = static_cast<int64_t>(v.size()); i < n; ++i) {
    v.push_back(static_cast<T>((i % 9) - 4));
  }
  return v;
}

// What cast.h says x becomes.
template <typename To, typename From>
bool Same(From x, To y) {
  if constexpr (std::is_same_v<To, bool>) {
    return y == (x != From(0));
  } else if constexpr (std::is_same_v<To, int64_t> &&
                       std::is_floating_point_v<From>) {
    const double d = static_cast<double>(x);
    if (std::isnan(d) || d >= 9223372036854775808.0 ||
        d < -9223372036854775808.0) {
      return y == std::numeric_limits<int64_t>::min();
    }
    return y == static_cast<int64_t>(std::trunc(d));
  } else if constexpr (std::is_floating_point_v<To>) {
    const To want = static_cast<To>(x);
    return (std::isnan(want) && std::isnan(y)) || want == y;
  } else {
    return y == static_cast<To>(x);
  }
}

template <typename From, typename To>
int Pair(int64_t n) {
  std::vector<Store<From>> x = Inputs<From>(n);
  std::vector<Store<To>> y(x.size());
  CastAttrs a;
  a.to = testing::DTypeOf<To>();
  Layer<CastAttrs> layer("c", a, {}, "direct");
  const Shape shape = {static_cast<int64_t>(x.size())};
  Tensor xt{x.data(), testing::DTypeOf<From>(), shape};
  Check(layer.OutputDType(xt) == a.to, "cast's output dtype is `to`");
  layer.Forward(xt, Tensor{y.data(), a.to, layer.OutputShape(xt)});
  bool ok = true;
  for (size_t i = 0; i < x.size(); ++i) ok &= Same<To, From>(x[i], y[i]);
  Check(ok, std::string("cast ") + Name(testing::DTypeOf<From>()) + " -> " +
                Name(a.to) + " of " + std::to_string(x.size()));
  return 1;
}

template <typename From>
int FromAll(int64_t n) {
  return Pair<From, float>(n) + Pair<From, double>(n) + Pair<From, int64_t>(n) +
         Pair<From, bool>(n);
}

}  // namespace

int Main() {
  int ran = 0;
  for (int64_t n : {12, 100000}) {
    ran += FromAll<float>(n) + FromAll<double>(n) + FromAll<int64_t>(n) +
           FromAll<bool>(n);
  }
  std::vector<float> x(4);
  Tensor xt{x.data(), DType::kFloat32, {4}};
  CastAttrs a;
  a.to = DType::kInt64;
  Layer<CastAttrs> layer("c", a, {}, "direct");
  ExpectError(
      "output dtype", ErrorKind::kShape,
      "cast layer 'c' (direct): output buffer is float32 (4,), "
      "expected int64 (4,)",
      [&] { layer.Forward(xt, Tensor{x.data(), DType::kFloat32, {4}}); });
  ExpectError("params", ErrorKind::kInvalidArgument,
              "cast takes no parameter tensors, got 1",
              [&] { Layer<CastAttrs>("c", a, {xt}, "direct"); });
  return testing::Summary("cast", ran);
}

}  // namespace ai3
