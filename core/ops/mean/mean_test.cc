// mean against a naive reduction in double over every subset of axes of a
// few shapes (positive and negative axes, keepdim or not, empty = all),
// empty inputs (NaN, as torch), both dtypes; then the errors.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/mean/mean.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

template <typename T>
void Case(const Shape& in, const std::vector<int64_t>& axes, bool keepdim) {
  const DType dtype = sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
  auto x = testing::Cast<T>(testing::RandomVector(NumElements(in), 3));
  MeanAttrs a;
  a.axes = axes;
  a.keepdim = keepdim;
  Layer<MeanAttrs> layer("m", a, {}, "direct");
  Tensor xt{x.data(), dtype, in};
  const Shape out = layer.OutputShape(xt);
  std::vector<T> y(NumElements(out), T(-1));
  layer.Forward(xt, Tensor{y.data(), dtype, out});
  // Reference: sums by output index (kept coordinates), then divide.
  const int rank = static_cast<int>(in.size());
  std::vector<bool> red(rank, axes.empty());
  for (int64_t ax : axes) red[ax < 0 ? ax + rank : ax] = true;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) count *= red[d] ? in[d] : 1;
  std::vector<double> want(y.size(), 0.0);
  for (int64_t i = 0; i < NumElements(in); ++i) {
    int64_t rest = i, o = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = rest % in[d];
      rest /= in[d];
      if (!red[d]) {
        o += c * stride;
        stride *= in[d];
      }
    }
    want[o] += double(x[i]);
  }
  for (double& v : want) v /= double(count);
  std::string desc = "mean " + ToString(in) + " axes";
  for (int64_t ax : axes) desc += " " + std::to_string(ax);
  desc += keepdim ? " keepdim" : "";
  if (count == 0) {
    bool nan = true;
    for (T v : y) nan &= std::isnan(v);
    Check(nan, desc + ": NaN for no elements");
    return;
  }
  const double tol = sizeof(T) == 8 ? 1e-13 : 1e-5;
  const double err = testing::MaxRelativeError(y, want);
  Check(err <= tol, desc + ": max relative error " + std::to_string(err));
}

}  // namespace

int Main() {
  const std::vector<Shape> shapes = {{5},          {3, 4},      {2, 3, 4, 5},
                                     {2, 1, 3, 1}, {2, 0, 3},   {2, 64, 14, 14},
                                     {}};
  int ran = 0;
  for (const Shape& s : shapes) {
    const int rank = static_cast<int>(s.size());
    for (int mask = 0; mask < (1 << rank); ++mask) {
      std::vector<int64_t> axes;
      for (int d = 0; d < rank; ++d) {
        if (mask & (1 << d)) axes.push_back(mask & 1 ? d - rank : d);
      }
      for (int keep = 0; keep < 2; ++keep) {
        Case<float>(s, axes, keep);
        Case<double>(s, axes, keep);
        ran += 2;
      }
    }
  }
  std::vector<float> x(6);
  Tensor xt{x.data(), DType::kFloat32, {2, 3}};
  MeanAttrs a;
  a.axes = {2};
  Layer<MeanAttrs> layer("m", a, {}, "direct");
  ExpectError("range", ErrorKind::kShape,
              "mean layer 'm' (direct): axis 2 is out of range for a rank-2 "
              "input (2, 3)",
              [&] { layer.OutputShape(xt); });
  a.axes = {1, -1};
  Layer<MeanAttrs> twice("m", a, {}, "direct");
  ExpectError("twice", ErrorKind::kShape,
              "axis -1 (dimension 1) is given twice",
              [&] { twice.OutputShape(xt); });
  return testing::Summary("mean", ran);
}

}  // namespace ai3
