// Every reduction against a naive one in double over every subset of axes
// of a few shapes (positive and negative axes, keepdim or not, empty =
// all), empty inputs (mean NaN as torch, the others ONNX's identities),
// NaN and infinities in max / min / log_sum_exp, both dtypes; then the
// errors.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
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

// The reduction of `xs` (in double), as mean.h defines it.
double Reference(Reduction r, const std::vector<double>& xs) {
  const double inf = std::numeric_limits<double>::infinity();
  double acc = r == Reduction::kProd  ? 1
               : r == Reduction::kMax ? -inf
               : r == Reduction::kMin ? inf
                                      : 0;
  double m = -inf;
  for (double v : xs) m = std::isnan(v) || std::isnan(m) ? NAN : std::max(m, v);
  const double shift = std::isfinite(m) ? m : 0;
  for (double v : xs) {
    switch (r) {
      case Reduction::kMean:
      case Reduction::kSum:
        acc += v;
        break;
      case Reduction::kProd:
        acc *= v;
        break;
      case Reduction::kMax:
        acc = std::isnan(acc) || acc > v ? acc : v;
        break;
      case Reduction::kMin:
        acc = std::isnan(acc) || acc < v ? acc : v;
        break;
      case Reduction::kL1:
        acc += std::fabs(v);
        break;
      case Reduction::kL2:
      case Reduction::kSumSquare:
        acc += v * v;
        break;
      case Reduction::kLogSumExp:
        acc += std::exp(v - shift);
        break;
    }
  }
  if (r == Reduction::kMean) return acc / double(xs.size());
  if (r == Reduction::kL2) return std::sqrt(acc);
  if (r == Reduction::kLogSumExp) return shift + std::log(acc);
  return acc;
}

template <class Attrs, typename T>
void Case(const Shape& in, const std::vector<int64_t>& axes, bool keepdim,
          bool special = false) {
  const DType dtype = sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
  auto xd = testing::RandomVector(NumElements(in), 3);
  if (Attrs::kReduction == Reduction::kProd) {
    for (double& v : xd) v = 1 + v / 4;  // products of many: near 1
  }
  if (special && xd.size() > 5) {
    xd[1] = std::numeric_limits<double>::infinity();
    xd[3] = -std::numeric_limits<double>::infinity();
    xd[4] = std::numeric_limits<double>::quiet_NaN();
  }
  auto x = testing::Cast<T>(xd);
  Attrs a;
  a.axes = axes;
  a.keepdim = keepdim;
  Layer<Attrs> layer("m", a, {}, "direct");
  Tensor xt{x.data(), dtype, in};
  const Shape out = layer.OutputShape(xt);
  std::vector<T> y(NumElements(out), T(-1));
  layer.Forward(xt, Tensor{y.data(), dtype, out});
  // Reference: sums by output index (kept coordinates), then divide.
  const int rank = static_cast<int>(in.size());
  std::vector<bool> red(rank, axes.empty());
  for (int64_t ax : axes) red[ax < 0 ? ax + rank : ax] = true;
  std::vector<std::vector<double>> groups(y.size());
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
    groups[o].push_back(double(x[i]));
  }
  std::string desc = std::string(Attrs::kOp) + " " + Name(dtype) + " " +
                     ToString(in) + " axes";
  for (int64_t ax : axes) desc += " " + std::to_string(ax);
  desc += keepdim ? " keepdim" : "";
  desc += special ? " with inf and NaN" : "";
  const double tol = sizeof(T) == 8 ? 1e-12 : 2e-5;
  // A sum's rounding error grows with the sum of its terms' magnitudes,
  // not with the result (many terms cancelling).
  const double sum_tol = sizeof(T) == 8 ? 1e-15 : 1e-7;
  const Reduction r = Attrs::kReduction;
  const bool sums = r == Reduction::kSum || r == Reduction::kMean ||
                    r == Reduction::kL1 || r == Reduction::kSumSquare;
  for (size_t o = 0; o < y.size(); ++o) {
    const double want = Reference(r, groups[o]);
    const double got = double(y[o]);
    double magnitude = 0;
    for (double v : groups[o]) {
      magnitude += r == Reduction::kSumSquare ? v * v : std::fabs(v);
    }
    if (r == Reduction::kMean && !groups[o].empty()) {
      magnitude /= double(groups[o].size());
    }
    const double bound =
        tol * (1 + std::fabs(want)) + (sums ? sum_tol * magnitude : 0.0);
    const bool ok = std::isnan(want)   ? std::isnan(got)
                    : std::isinf(want) ? got == want
                                       : std::fabs(got - want) <= bound;
    if (!ok) {
      Check(false, desc + ": output " + std::to_string(o) + " got " +
                       std::to_string(got) + " want " + std::to_string(want));
      return;
    }
  }
}

template <class Attrs>
int RunReduction(const std::vector<Shape>& shapes) {
  int ran = 0;
  for (const Shape& s : shapes) {
    const int rank = static_cast<int>(s.size());
    for (int mask = 0; mask < (1 << rank); ++mask) {
      std::vector<int64_t> axes;
      for (int d = 0; d < rank; ++d) {
        if (mask & (1 << d)) axes.push_back(mask & 1 ? d - rank : d);
      }
      for (int keep = 0; keep < 2; ++keep) {
        Case<Attrs, float>(s, axes, keep);
        Case<Attrs, double>(s, axes, keep);
        Case<Attrs, double>(s, axes, keep, /*special=*/true);
        ran += 3;
      }
    }
  }
  return ran;
}

}  // namespace

int Main() {
  const std::vector<Shape> shapes = {
      {5}, {3, 4}, {2, 3, 4, 5}, {2, 1, 3, 1}, {2, 0, 3}, {2, 64, 14, 14}, {}};
  const int ran = RunReduction<MeanAttrs>(shapes) +
                  RunReduction<ReduceSumAttrs>(shapes) +
                  RunReduction<ReduceProdAttrs>(shapes) +
                  RunReduction<ReduceMaxAttrs>(shapes) +
                  RunReduction<ReduceMinAttrs>(shapes) +
                  RunReduction<ReduceL1Attrs>(shapes) +
                  RunReduction<ReduceL2Attrs>(shapes) +
                  RunReduction<ReduceSumSquareAttrs>(shapes) +
                  RunReduction<ReduceLogSumExpAttrs>(shapes);
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
  ReduceMaxAttrs m;
  m.axes = {0, 0};
  Layer<ReduceMaxAttrs> max_twice("mx", m, {}, "direct");
  ExpectError("max twice", ErrorKind::kShape,
              "reduce_max layer 'mx' (direct): axis 0 (dimension 0) is given "
              "twice",
              [&] { max_twice.OutputShape(xt); });
  ExpectError("params", ErrorKind::kInvalidArgument,
              "reduce_sum takes no parameter tensors, got 1", [&] {
                Layer<ReduceSumAttrs>("s", ReduceSumAttrs{}, {xt}, "direct");
              });
  return testing::Summary("mean", ran);
}

}  // namespace ai3
