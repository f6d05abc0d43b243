// reshape: -1 and 0 resolved as ONNX does, the elements copied in order,
// float32 and float64; errors for incompatible sizes and bad targets.
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/reshape/reshape.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

template <typename T>
void Case(const Shape& in, const Shape& target, const Shape& want) {
  const DType dtype = sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
  auto x = testing::Cast<T>(testing::RandomVector(NumElements(in), 1));
  ReshapeAttrs a;
  a.shape = target;
  Layer<ReshapeAttrs> layer("r", a, {}, "direct");
  Tensor xt{x.data(), dtype, in};
  const Shape out = layer.OutputShape(xt);
  Check(out == want, "reshape " + ToString(in) + " to " + ToString(target) +
                         ": got " + ToString(out));
  if (out != want) return;
  std::vector<T> y(x.size(), T(-1));
  layer.Forward(xt, Tensor{y.data(), dtype, out});
  Check(y == x, "reshape " + ToString(in) + ": elements");
}

}  // namespace

int Main() {
  for (int f64 = 0; f64 < 2; ++f64) {
    auto run = [&](const Shape& in, const Shape& t, const Shape& w) {
      if (f64) {
        Case<double>(in, t, w);
      } else {
        Case<float>(in, t, w);
      }
    };
    run({2, 3, 4}, {2, 12}, {2, 12});
    run({2, 3, 4}, {-1, 4}, {6, 4});
    run({2, 3, 4}, {0, -1}, {2, 12});
    run({2, 3, 4}, {0, 0, 2, 2}, {2, 3, 2, 2});
    run({2, 1, 4}, {2, 4}, {2, 4});
    run({5}, {1, 5, 1}, {1, 5, 1});
    run({2, 0, 3}, {0, -1, 3}, {2, 0, 3});
    run({}, {1, 1}, {1, 1});
    run({3, 300000}, {-1}, {900000});
  }
  std::vector<float> x(24);
  Tensor xt{x.data(), DType::kFloat32, {2, 3, 4}};
  ReshapeAttrs a;
  a.shape = {5, -1};
  Layer<ReshapeAttrs> bad("r", a, {}, "direct");
  ExpectError("indivisible", ErrorKind::kShape,
              "reshape layer 'r' (direct): cannot reshape input (2, 3, 4) "
              "(24 elements) to (5, -1)",
              [&] { bad.OutputShape(xt); });
  a.shape = {5, 5};
  Layer<ReshapeAttrs> bad2("r", a, {}, "direct");
  ExpectError("count", ErrorKind::kShape, "to (5, 5) (25 elements)",
              [&] { bad2.OutputShape(xt); });
  a.shape = {0, 0, 0, 0};
  Layer<ReshapeAttrs> bad3("r", a, {}, "direct");
  ExpectError("zero past rank", ErrorKind::kShape, "copies dimension 3",
              [&] { bad3.OutputShape(xt); });
  a.shape = {-1, -1};
  ExpectError("two -1", ErrorKind::kInvalidArgument, "more than one -1",
              [&] { Layer<ReshapeAttrs>("r", a, {}, "direct"); });
  a.shape = {-2};
  ExpectError("below -1", ErrorKind::kInvalidArgument, "below -1",
              [&] { Layer<ReshapeAttrs>("r", a, {}, "direct"); });
  // Targets whose product wraps int64 (to 0 for (2^62, 4, 0), which then
  // matched an empty input; found by tests/fuzz).
  std::vector<float> none;
  Tensor empty{none.data(), DType::kFloat32, {0, 3}};
  for (const Shape& target : {Shape{int64_t{1} << 62, 4, 0},
                              Shape{int64_t{1} << 32, int64_t{1} << 32, -1},
                              Shape{std::numeric_limits<int64_t>::max(), 2}}) {
    a.shape = target;
    Layer<ReshapeAttrs> huge("r", a, {}, "direct");
    ExpectError("overflow " + ToString(target), ErrorKind::kShape,
                "is too large", [&] { huge.OutputShape(empty); });
  }
  std::printf("reshape: %d failed\n", testing::Failures());
  return testing::Failures() != 0;
}

}  // namespace ai3
