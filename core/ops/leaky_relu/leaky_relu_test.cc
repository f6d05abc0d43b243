// leaky_relu against its definition through the shared elementwise-op test
// (every registered CPU algorithm, tensors of several ranks and sizes,
// float32 and float64, NaN and infinities) for several slopes: torch's and
// ONNX's default, Keras 3's, none (0: relu, with 0 * -inf = NaN as torch),
// identity, steeper than 1 and negative; plus bad alphas.
#include <cmath>
#include <string>
#include <vector>

#include "core/ops/leaky_relu/leaky_relu.h"
#include "core/testing/unary_op_test.h"

namespace ai3 {

int Main() {
  int ran = 0;
  for (double alpha : {0.01, 0.3, 0.0, 1.0, 2.5, -0.5}) {
    LeakyReluAttrs a;
    a.alpha = alpha;
    auto reference = [alpha](double v) { return v < 0 ? alpha * v : v; };
    ran +=
        testing::RunUnaryCases(a, reference, " alpha " + std::to_string(alpha));
  }
  testing::UnaryErrorCases<LeakyReluAttrs>();
  for (double bad : {std::nan(""), double(INFINITY)}) {
    LeakyReluAttrs a;
    a.alpha = bad;
    testing::ExpectRefused("alpha", a, "alpha must be finite");
  }
  return testing::Summary("leaky_relu", ran);
}

}  // namespace ai3
