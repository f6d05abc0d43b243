// argmax and argmin against a naive search over shapes, axes (negative
// ones), keepdim and select_last_index, in float32, float64 and int64, with
// ties and NaNs; then the errors.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/argmax/argmax.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::DTypeOf;
using testing::ExpectError;

// The index the naive search gives for output element j (its position with
// the axis removed): a NaN wins at once (the first, or with `last` the
// last); otherwise the first (last) strict extreme.
template <bool kLargest, typename T>
int64_t Expected(const std::vector<T>& x, const Shape& in, int axis, int64_t j,
                 bool last) {
  int64_t inner = 1;
  for (size_t d = axis + 1; d < in.size(); ++d) inner *= in[d];
  const int64_t o = j / inner, c = j % inner;
  int64_t found = -1, nan = -1;
  for (int64_t i = 0; i < in[axis]; ++i) {
    const T v = x[(o * in[axis] + i) * inner + c];
    if (v != v) {
      if (nan < 0 || last) nan = i;
      continue;
    }
    if (found < 0) {
      found = i;
      continue;
    }
    const T b = x[(o * in[axis] + found) * inner + c];
    const bool better = kLargest ? v > b : v < b;
    if (better || (last && v == b)) found = i;
  }
  return nan >= 0 ? nan : found;
}

template <bool kLargest, typename T>
void Case(const Shape& in, int64_t axis, bool keepdim, bool last,
          bool specials) {
  // Few distinct values, so that ties are common.
  std::vector<T> x = testing::TiedValues<T>(NumElements(in), 7, 3, specials, 5);
  ArgExtremeAttrs<kLargest> a;
  a.axis = axis;
  a.keepdim = keepdim;
  a.select_last_index = last;
  Layer<ArgExtremeAttrs<kLargest>> layer("a", a, {}, "direct");
  Tensor xt{x.data(), DTypeOf<T>(), in};
  const Shape out = layer.OutputShape(xt);
  std::vector<int64_t> y(NumElements(out), -7);
  layer.Forward(xt, Tensor{y.data(), DType::kInt64, out});
  const int d = static_cast<int>(axis < 0 ? axis + in.size() : axis);
  Shape want_shape = in;
  if (keepdim) {
    want_shape[d] = 1;
  } else {
    want_shape.erase(want_shape.begin() + d);
  }
  bool ok = out == want_shape;
  for (int64_t j = 0; ok && j < NumElements(out); ++j) {
    ok &= y[j] == Expected<kLargest>(x, in, d, j, last);
  }
  Check(ok, std::string(ArgExtremeAttrs<kLargest>::kOp) + " " + ToString(in) +
                " axis " + std::to_string(axis) + (keepdim ? " keepdim" : "") +
                (last ? " last" : "") + (specials ? " specials" : "") + " " +
                Name(DTypeOf<T>()));
}

}  // namespace

int Main() {
  int ran = 0;
  for (bool keepdim : {false, true}) {
    for (bool last : {false, true}) {
      auto all = [&](const Shape& s, int64_t axis) {
        for (bool specials : {false, true}) {
          Case<true, float>(s, axis, keepdim, last, specials);
          Case<false, float>(s, axis, keepdim, last, specials);
          Case<true, double>(s, axis, keepdim, last, specials);
          Case<false, double>(s, axis, keepdim, last, specials);
          ran += 4;
        }
        Case<true, int64_t>(s, axis, keepdim, last, false);
        Case<false, int64_t>(s, axis, keepdim, last, false);
        ran += 2;
      };
      for (const auto& [shape, axis] : testing::AxisCases()) all(shape, axis);
      all({3, 4, 300}, 1);  // inner blocks of 256 and a remainder
      all({40, 1000}, -1);  // the classifier's search over logits
    }
  }
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  ArgmaxAttrs far;
  far.axis = 2;
  Layer<ArgmaxAttrs> layer("a", far, {}, "direct");
  ExpectError("axis", ErrorKind::kShape,
              "argmax layer 'a' (direct): axis 2 is out of range",
              [&] { layer.OutputShape(xt); });
  ArgminAttrs first;
  Layer<ArgminAttrs> min_layer("a", first, {}, "direct");
  Tensor empty{x.data(), DType::kFloat32, {0, 3}};
  ExpectError("empty axis", ErrorKind::kShape, "the axis is empty",
              [&] { min_layer.OutputShape(empty); });
  std::vector<uint8_t> flags(6);
  Tensor bt{flags.data(), DType::kBool, {2, 3}};
  ExpectError("dtype", ErrorKind::kDType,
              "argmin takes float32, float64 or int64",
              [&] { min_layer.OutputShape(bt); });
  Tensor scalar{x.data(), DType::kFloat32, {}};
  ExpectError("scalar", ErrorKind::kShape, "rank >= 1",
              [&] { min_layer.OutputShape(scalar); });
  std::vector<double> wrong(6);
  ExpectError("output dtype", ErrorKind::kShape, "expected int64", [&] {
    min_layer.Forward(xt, Tensor{wrong.data(), DType::kFloat64, {3}});
  });
  return testing::Summary("argmax and argmin", ran);
}

}  // namespace ai3
