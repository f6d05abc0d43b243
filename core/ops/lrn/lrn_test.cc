// Every registered CPU lrn algorithm against the definition (in double)
// over odd and even window sizes, torch's and ONNX's window starts, a
// window wider than the channels, ranks 3 to 5, NCHW and NHWC, float32 and
// float64; then the errors bad attributes and inputs must raise.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "core/ops/lrn/lrn.h"
#include "core/testing/op_test.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;
using testing::ExpectError;

struct Case {
  Shape shape;  // (N, C, spatial...)
  int64_t size, before;
  double alpha, beta, bias;
};

template <typename T>
void RunCase(T, const Case& p, Layout layout, const std::string& algorithm) {
  const DType dtype = testing::DTypeOf<T>();
  const int64_t n = p.shape[0], c = p.shape[1];
  const int64_t s = NumElements(p.shape) / (n * c);
  const auto xt = testing::Cast<T>(testing::RandomVector(n * c * s, 9));
  std::vector<double> xd(xt.begin(), xt.end()), want(xd.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t k = 0; k < s; ++k) {
        double sum = 0;
        for (int64_t j = ch - p.before; j < ch - p.before + p.size; ++j) {
          if (j >= 0 && j < c) sum += std::pow(xd[(i * c + j) * s + k], 2);
        }
        want[(i * c + ch) * s + k] =
            xd[(i * c + ch) * s + k] /
            std::pow(p.bias + p.alpha / p.size * sum, p.beta);
      }
  Shape shape = p.shape;
  if (layout == Layout::kNHWC) testing::ToChannelsLast(&shape, {&xd, &want});
  auto x = testing::Cast<T>(xd);
  LrnAttrs a;
  a.size = p.size;
  a.before = p.before;
  a.alpha = p.alpha;
  a.beta = p.beta;
  a.bias = p.bias;
  a.layout = layout;
  Layer<LrnAttrs> layer("lrn", a, {}, algorithm);
  Tensor in{x.data(), dtype, shape};
  const std::string desc = algorithm + " " + Name(dtype) + " " + Name(layout) +
                           " " + ToString(shape) + " size " +
                           std::to_string(p.size);
  Check(layer.OutputShape(in) == shape, desc + ": output shape");
  std::vector<T> y(want.size(), T(-42));
  layer.Forward(in, Tensor{y.data(), dtype, shape});
  Check(testing::MaxRelativeError(y, want) < (sizeof(T) == 4 ? 1e-5 : 1e-12),
        desc);
}

void ErrorCases() {
  LrnAttrs a;
  a.size = 0;
  ExpectError("size", ErrorKind::kInvalidArgument, "size must be >= 1",
              [&] { Layer<LrnAttrs>("lrn", a, {}, "direct"); });
  a.size = 3;
  a.before = 3;
  ExpectError("before", ErrorKind::kInvalidArgument,
              "must be in [0, size = 3), got 3",
              [&] { Layer<LrnAttrs>("lrn", a, {}, "direct"); });
  a.before = 1;
  std::vector<float> x(8);
  Layer<LrnAttrs> layer("lrn", a, {}, "direct");
  ExpectError("rank", ErrorKind::kShape, "expected an input of rank >= 3", [&] {
    layer.OutputShape(Tensor{x.data(), DType::kFloat32, {2, 4}});
  });
}

}  // namespace

int Main() {
  const std::vector<Case> cases = {
      {{1, 1, 1}, 1, 0, 1e-4, 0.75, 1.0},
      {{2, 7, 5, 4}, 5, 2, 1e-4, 0.75, 2.0},  // AlexNet's
      {{2, 6, 3, 3}, 4, 2, 0.1, 0.5, 1.0},    // torch, even size
      {{2, 6, 3, 3}, 4, 1, 0.1, 0.5, 1.0},    // ONNX, even size
      {{1, 3, 4}, 9, 4, 1.0, 1.0, 0.5},       // wider than C
      {{1, 5, 2, 2, 3}, 3, 1, 0.01, 0.75, 1.0},
      {{2, 64, 28, 28}, 5, 2, 1e-4, 0.75, 1.0},  // threaded
  };
  const int ran =
      testing::RunEachLayout(testing::CpuAlgorithms<LrnAttrs>(), cases,
                             [](auto... args) { RunCase(args...); });
  ErrorCases();
  return testing::Summary("lrn", ran);
}

}  // namespace ai3
