// Every registered CPU clamp algorithm against the definition
// min(max(x, lo), hi), to the bit, through the shared elementwise-op test
// (tensors of several ranks and sizes, including empty and rank-0, in
// float32 and float64; NaN must pass through as in PyTorch), for several
// bounds: ReLU6's, Hardtanh's, one-sided, min > max.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/clamp/clamp.h"
#include "core/testing/unary_op_test.h"

namespace ai3 {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

int Main() {
  const std::vector<std::pair<double, double>> bounds = {
      {0.0, 6.0},    {-1.0, 1.0}, {-kInf, 0.5},
      {-0.25, kInf}, {2.0, -2.0}, {0.1, 0.1},
  };
  int ran = 0;
  for (const auto& [lo, hi] : bounds) {
    ClampAttrs a;
    a.min = lo;
    a.max = hi;
    // torch.clamp: min first, then max, so min > max gives max everywhere.
    auto reference = [lo = lo, hi = hi](double v) {
      return std::isnan(v) ? v : std::min(std::max(v, lo), hi);
    };
    ran += testing::RunUnaryCases(
        a, reference,
        " [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
        {/*f32=*/0, /*f64=*/0});
  }
  testing::UnaryErrorCases<ClampAttrs>();
  ClampAttrs nan_bound;
  nan_bound.min = std::nan("");
  testing::ExpectRefused("NaN bound", nan_bound,
                         "clamp bounds must not be NaN");
  return testing::Summary("clamp", ran);
}

}  // namespace ai3
