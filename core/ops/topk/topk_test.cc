// topk against a naive reference (a stable sort of every line) over shapes,
// axes (negative ones), k from 0 to the axis' size, largest and smallest,
// in float32, float64 and int64, with ties, NaNs and infinities; then the
// errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/topk/topk.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::DTypeOf;
using testing::ExpectError;

// The indices of one line (element i at x[base + i * inner]) in ranking
// order: a stable sort, NaN first when largest and last when smallest.
template <typename T>
std::vector<int64_t> Ranked(const std::vector<T>& x, int64_t base, int64_t size,
                            int64_t inner, bool largest) {
  std::vector<int64_t> order(size);
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](int64_t i) {
    const T v = x[base + i * inner];
    // NaN as +inf's successor: a pair (is NaN, value).
    if constexpr (std::is_floating_point_v<T>) {
      if (v != v) return std::make_pair(1, T{0});
    }
    return std::make_pair(0, v);
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return largest ? key(a) > key(b) : key(a) < key(b);
  });
  return order;
}

template <typename T>
void Case(const Shape& in, int64_t axis, int64_t k, bool largest,
          bool specials) {
  // Few distinct values, so that ties are common.
  std::vector<T> x =
      testing::TiedValues<T>(NumElements(in), 11, 4, specials, 4);
  TopkAttrs a;
  a.k = k;
  a.axis = axis;
  a.largest = largest;
  Layer<TopkAttrs> layer("t", a, {}, "direct");
  Tensor xt{x.data(), DTypeOf<T>(), in};
  const Shape out = layer.OutputShape(xt);
  std::vector<int64_t> y(NumElements(out), -7);
  layer.Forward(xt, Tensor{y.data(), DType::kInt64, out});
  const int d = static_cast<int>(axis < 0 ? axis + in.size() : axis);
  Shape want_shape = in;
  want_shape[d] = k;
  bool ok = out == want_shape;
  int64_t inner = 1, outer = 1;
  for (size_t q = d + 1; q < in.size(); ++q) inner *= in[q];
  for (int q = 0; q < d; ++q) outer *= in[q];
  for (int64_t o = 0; ok && o < outer; ++o) {
    for (int64_t c = 0; ok && c < inner; ++c) {
      const auto want = Ranked(x, o * in[d] * inner + c, in[d], inner, largest);
      for (int64_t j = 0; j < k; ++j) {
        ok &= y[(o * k + j) * inner + c] == want[j];
      }
    }
  }
  Check(ok, "topk " + ToString(in) + " axis " + std::to_string(axis) + " k " +
                std::to_string(k) + (largest ? " largest" : " smallest") +
                (specials ? " specials" : "") + " " + Name(DTypeOf<T>()));
}

}  // namespace

int Main() {
  int ran = 0;
  auto all = [&](const Shape& s, int64_t axis) {
    const int d = static_cast<int>(axis < 0 ? axis + s.size() : axis);
    const int64_t size = s[d];
    for (int64_t k : {int64_t{0}, int64_t{1}, size / 2, size}) {
      for (bool largest : {true, false}) {
        for (bool specials : {false, true}) {
          Case<float>(s, axis, k, largest, specials);
          Case<double>(s, axis, k, largest, specials);
          ran += 2;
        }
        Case<int64_t>(s, axis, k, largest, false);
        ++ran;
      }
    }
  };
  for (const auto& [shape, axis] : testing::AxisCases()) all(shape, axis);
  all({3, 5, 300}, 1);
  all({64, 1000}, -1);  // a classifier's top 5 over logits, many lines
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  TopkAttrs big;
  big.k = 4;
  Layer<TopkAttrs> layer("t", big, {}, "direct");
  ExpectError("k", ErrorKind::kInvalidArgument,
              "topk layer 't' (direct): k = 4 along axis -1 of (2, 3)",
              [&] { layer.OutputShape(xt); });
  TopkAttrs far;
  far.axis = 2;
  Layer<TopkAttrs> far_layer("t", far, {}, "direct");
  ExpectError("axis", ErrorKind::kShape, "axis 2 is out of range",
              [&] { far_layer.OutputShape(xt); });
  std::vector<uint8_t> flags(6);
  Tensor bt{flags.data(), DType::kBool, {2, 3}};
  TopkAttrs one;
  Layer<TopkAttrs> one_layer("t", one, {}, "direct");
  ExpectError("dtype", ErrorKind::kDType,
              "topk takes float32, float64 or int64",
              [&] { one_layer.OutputShape(bt); });
  Tensor scalar{x.data(), DType::kFloat32, {}};
  ExpectError("scalar", ErrorKind::kShape, "rank >= 1",
              [&] { one_layer.OutputShape(scalar); });
  std::vector<double> wrong(2);
  ExpectError("output dtype", ErrorKind::kShape, "expected int64", [&] {
    one_layer.Forward(xt, Tensor{wrong.data(), DType::kFloat64, {2, 1}});
  });
  return testing::Summary("topk", ran);
}

}  // namespace ai3
