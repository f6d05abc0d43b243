// trilu against a naive triangle over shapes (batched, non-square, empty),
// diagonals k from far below to far above (past the matrix, and int64's
// extremes), upper and lower, in every dtype; then the errors.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/trilu/trilu.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::DTypeOf;
using testing::ExpectError;
using testing::Store;

template <typename T>
void Case(const Shape& in, bool upper, int64_t k) {
  const int64_t n = NumElements(in);
  std::vector<Store<T>> x(n), y(n, Store<T>(7));
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<Store<T>>(i % 5 + 1);
  TriluAttrs a;
  a.upper = upper;
  a.k = k;
  Layer<TriluAttrs> layer("t", a, {}, "direct");
  Tensor xt{x.data(), DTypeOf<T>(), in};
  layer.Forward(xt, Tensor{y.data(), DTypeOf<T>(), layer.OutputShape(xt)});
  const int64_t rows = in[in.size() - 2], cols = in[in.size() - 1];
  bool ok = true;
  for (int64_t e = 0; e < n; ++e) {
    const int64_t i = e / cols % rows, j = e % cols;
    // In long double, so that k at int64's extremes does not overflow.
    const long double diff = static_cast<long double>(j) - i;
    const bool keep = upper ? diff >= k : diff <= k;
    ok &= y[e] == (keep ? x[e] : Store<T>(0));
  }
  Check(ok, std::string("trilu ") + ToString(in) +
                (upper ? " upper" : " lower") + " k " + std::to_string(k) +
                " " + Name(DTypeOf<T>()));
}

}  // namespace

int Main() {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  int ran = 0;
  for (bool upper : {true, false}) {
    for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{2},
                      int64_t{-3}, int64_t{7}, int64_t{-7}, kMax, kMin}) {
      for (const Shape& s : {Shape{4, 4}, Shape{3, 5}, Shape{5, 3},
                             Shape{2, 3, 4, 4}, Shape{1, 1}, Shape{0, 3},
                             Shape{3, 0}, Shape{2, 0, 2}, Shape{300, 200}}) {
        Case<float>(s, upper, k);
        Case<double>(s, upper, k);
        Case<int64_t>(s, upper, k);
        Case<bool>(s, upper, k);
        ran += 4;
      }
    }
  }
  std::vector<float> x(6);
  Layer<TriluAttrs> layer("t", TriluAttrs{}, {}, "direct");
  Tensor vector{x.data(), DType::kFloat32, {6}};
  ExpectError("rank", ErrorKind::kShape,
              "trilu layer 't' (direct): trilu "
              "needs an input of rank >= 2",
              [&] { layer.OutputShape(vector); });
  std::vector<float> w(6);
  Tensor weight{w.data(), DType::kFloat32, {6}};
  ExpectError("weights", ErrorKind::kInvalidArgument,
              "trilu takes no parameter tensors", [&] {
                Layer<TriluAttrs>("t", TriluAttrs{}, {weight}, "direct");
              });
  return testing::Summary("trilu", ran);
}

}  // namespace ai3
