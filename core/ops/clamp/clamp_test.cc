// Every registered CPU clamp algorithm against the definition
// min(max(x, lo), hi) over tensors of several ranks and sizes (including
// empty and rank-0) and several bounds (ReLU6's, Hardtanh's, one-sided,
// min > max), in float32 and float64; NaN must pass through as in PyTorch.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/clamp/clamp.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename T>
void RunCase(const Shape& shape, double lo, double hi,
             const std::string& algorithm) {
  const DType dtype =
      std::is_same_v<T, double> ? DType::kFloat64 : DType::kFloat32;
  const int64_t n = NumElements(shape);
  auto xd = testing::RandomVector(n, 7);
  for (double& v : xd) v *= 8;
  if (n > 5) {
    xd[1] = std::numeric_limits<double>::quiet_NaN();
    xd[2] = 0.0;
    xd[3] = -kInf;
    xd[4] = kInf;
    xd[5] = 6.0;
  }
  auto x = testing::Cast<T>(xd);
  std::vector<T> y(n, T(-42));
  ClampAttrs a;
  a.min = lo;
  a.max = hi;
  Layer<ClampAttrs> layer("test", a, {}, algorithm);
  Tensor xt{x.data(), dtype, shape};
  Tensor yt{y.data(), dtype, shape};
  std::string desc = algorithm + " " + Name(dtype) + " " + ToString(shape) +
                     " [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "]";
  Check(layer.OutputShape(xt) == shape, desc + ": output shape");
  layer.Forward(xt, yt);
  bool ok = true;
  const T tlo = static_cast<T>(lo), thi = static_cast<T>(hi);
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) {
      ok &= std::isnan(y[i]);
    } else {
      T want = x[i];
      if (want < tlo) want = tlo;
      if (want > thi) want = thi;
      ok &= y[i] == want;
    }
  }
  Check(ok, desc);
}

int Main() {
  const std::vector<Shape> shapes = {
      {},           {1},             {5},  {3, 7},
      {2, 3, 4, 5}, {1, 64, 56, 56}, {0},  {4, 0, 3},
      {100003},     {2, 3, 1, 1, 2},
  };
  const std::vector<std::pair<double, double>> bounds = {
      {0.0, 6.0}, {-1.0, 1.0}, {-kInf, 0.5}, {-0.25, kInf}, {2.0, -2.0},
      {0.1, 0.1},
  };
  const std::vector<std::string> names =
      Registry<ClampAttrs>::Get().Names(Device::kCPU);
  Check(!names.empty() && names[0] == "direct", "clamp 'direct' registered");
  int ran = 0;
  for (const std::string& algorithm : names) {
    for (const Shape& s : shapes) {
      for (const auto& [lo, hi] : bounds) {
        RunCase<float>(s, lo, hi, algorithm);
        RunCase<double>(s, lo, hi, algorithm);
        ran += 2;
      }
    }
  }
  std::vector<float> x(4);
  Tensor xt{x.data(), DType::kFloat32, {4}};
  ExpectError("params", ErrorKind::kInvalidArgument,
              "clamp takes no parameter tensors, got 1",
              [&] { Layer<ClampAttrs>("c", ClampAttrs{}, {xt}, "default"); });
  ClampAttrs nan_bound;
  nan_bound.min = std::nan("");
  ExpectError("NaN bound", ErrorKind::kInvalidArgument,
              "clamp layer 'c': clamp bounds must not be NaN",
              [&] { Layer<ClampAttrs>("c", nan_bound, {}, "default"); });
  Layer<ClampAttrs> layer("c", ClampAttrs{}, {}, "default");
  ExpectError("mixed dtypes", ErrorKind::kShape, "expected float32 (4,)", [&] {
    std::vector<double> y(4);
    layer.Forward(xt, Tensor{y.data(), DType::kFloat64, {4}});
  });
  std::printf("clamp: %d cases ran over %zu algorithms, %d failed\n", ran,
              names.size(), testing::Failures());
  return testing::Failures() != 0;
}

}  // namespace
}  // namespace ai3

int main() { return ai3::Main(); }
