// Every registered CPU flatten algorithm over a grid of shapes and dims
// (negative ones included), against torch.flatten's shape rule written out by
// hand, in float32 and float64; then the errors bad dims must raise.
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/flatten/flatten.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

struct Case {
  Shape in;
  int64_t start, end;
  Shape want;  // what torch.flatten(x, start, end) gives
};

template <typename T>
void RunCase(const Case& p, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  FlattenAttrs a;
  a.start_dim = p.start;
  a.end_dim = p.end;
  const int64_t n = NumElements(p.in);
  auto x = testing::Cast<T>(testing::RandomVector(n, 5));
  std::vector<T> y(n, T(-42));
  Layer<FlattenAttrs> layer("test", a, {}, algorithm);
  Tensor xt{x.data(), dtype, p.in};
  std::string desc = algorithm + " " + Name(dtype) + " " + ToString(p.in) +
                     " start " + std::to_string(p.start) + " end " +
                     std::to_string(p.end);
  Shape got = layer.OutputShape(xt);
  Check(got == p.want,
        desc + ": shape " + ToString(got) + ", expected " + ToString(p.want));
  if (got != p.want) return;
  layer.Forward(xt, Tensor{y.data(), dtype, p.want});
  Check(y == x, desc + ": data");
}

void ErrorCases() {
  std::vector<float> x(24);
  Tensor rank3{x.data(), DType::kFloat32, {2, 3, 4}};
  auto shape_of = [&](int64_t start, int64_t end, const Tensor& t) {
    FlattenAttrs a;
    a.start_dim = start;
    a.end_dim = end;
    Layer<FlattenAttrs>("f", a, {}, "default").OutputShape(t);
  };
  ExpectError("start too big", ErrorKind::kShape,
              "start_dim=3 is out of range for an input of rank 3 (2, 3, 4) "
              "(expected a dim in [-3, 2])",
              [&] { shape_of(3, -1, rank3); });
  ExpectError("end too negative", ErrorKind::kShape,
              "end_dim=-4 is out of range", [&] { shape_of(0, -4, rank3); });
  ExpectError("start after end", ErrorKind::kShape,
              "start_dim=2 comes after end_dim=1",
              [&] { shape_of(2, 1, rank3); });
  ExpectError("start after end, negative", ErrorKind::kShape,
              "start_dim=-1 comes after end_dim=0",
              [&] { shape_of(-1, 0, rank3); });
  // nn.Flatten's defaults on a rank-1 or rank-0 input fail as in PyTorch.
  ExpectError("default dims on a vector", ErrorKind::kShape,
              "start_dim=1 is out of range for an input of rank 1",
              [&] { shape_of(1, -1, Tensor{x.data(), DType::kFloat32, {5}}); });
  ExpectError("default dims on a scalar", ErrorKind::kShape,
              "start_dim=1 is out of range for an input of rank 0",
              [&] { shape_of(1, -1, Tensor{x.data(), DType::kFloat32, {}}); });
  ExpectError("params", ErrorKind::kInvalidArgument,
              "flatten takes no parameter tensors, got 1", [&] {
                Layer<FlattenAttrs>("f", FlattenAttrs{}, {rank3}, "direct");
              });
}

}  // namespace

int Main() {
  const std::vector<Case> cases = {
      {{2, 3, 4, 5}, 1, -1, {2, 60}},  // nn.Flatten()
      {{2, 3, 4, 5}, 0, -1, {120}},    // torch.flatten(x)
      {{2, 3, 4, 5}, 1, 2, {2, 12, 5}},
      {{2, 3, 4, 5}, -3, -2, {2, 12, 5}},
      {{2, 3, 4, 5}, 2, 2, {2, 3, 4, 5}},
      {{2, 3, 4, 5}, -1, -1, {2, 3, 4, 5}},
      {{2, 3, 4, 5}, -4, 0, {2, 3, 4, 5}},
      {{2, 3, 4, 5}, 0, 2, {24, 5}},
      {{7}, 0, -1, {7}},
      {{7}, -1, 0, {7}},
      {{}, 0, -1, {1}},  // a scalar flattens to (1,)
      {{}, -1, 0, {1}},
      {{3, 1}, 1, -1, {3, 1}},
      {{0, 3, 4}, 1, -1, {0, 12}},  // empty batch
      {{2, 0, 4}, 1, -1, {2, 0}},
      {{2, 300, 1000}, 1, -1, {2, 300000}},  // big enough to copy in parallel
      {{1, 3, 1, 1, 2}, 1, 3, {1, 3, 2}},
  };
  const int ran = testing::RunEach(
      testing::CpuAlgorithms<FlattenAttrs>(), cases,
      [](auto zero, const Case& p, const std::string& algorithm) {
        RunCase<decltype(zero)>(p, algorithm);
      });
  ErrorCases();
  return testing::Summary("flatten", ran);
}

}  // namespace ai3
