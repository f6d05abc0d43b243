// hardsigmoid against its definition: torch's parameters through the shared
// elementwise-op test, ONNX's defaults (0.2, 0.5) on a grid, bad attributes.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/layer.h"
#include "core/ops/hardsigmoid/hardsigmoid.h"
#include "core/testing/reference.h"
#include "core/testing/unary_op_test.h"

namespace ai3 {
namespace {

double Ref(double v, double alpha, double beta) {
  if (std::isnan(v)) return v;
  return std::min(std::max(alpha * v + beta, 0.0), 1.0);
}

void OnnxDefaults() {
  HardsigmoidAttrs a;
  a.alpha = 0.2;
  a.beta = 0.5;
  Layer<HardsigmoidAttrs> layer("h", a, {}, "direct");
  std::vector<double> x, want;
  for (double v = -6; v <= 6; v += 0.05) {
    x.push_back(v);
    want.push_back(Ref(v, 0.2, 0.5));
  }
  std::vector<double> y(x.size());
  const Shape shape = {static_cast<int64_t>(x.size())};
  layer.Forward(Tensor{x.data(), DType::kFloat64, shape},
                Tensor{y.data(), DType::kFloat64, shape});
  testing::Check(testing::MaxRelativeError(y, want) <= 1e-15,
                 "hardsigmoid alpha 0.2 beta 0.5");
  a.alpha = NAN;
  testing::ExpectRefused("alpha", a, "alpha and beta must be finite");
}

}  // namespace
}  // namespace ai3

int ai3::Main() {
  ai3::OnnxDefaults();
  return ai3::testing::RunUnaryOpTest<ai3::HardsigmoidAttrs>(
      [](double v) { return ai3::Ref(v, 1.0 / 6.0, 0.5); });
}
