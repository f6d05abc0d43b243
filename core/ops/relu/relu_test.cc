// relu against its definition through the shared elementwise-op test, to
// the bit: max(x, 0) is exact, and NaN passes through as in PyTorch.
#include <cmath>

#include "core/ops/relu/relu.h"
#include "core/testing/unary_op_test.h"

int ai3::Main() {
  return ai3::testing::RunUnaryOpTest<ai3::ReluAttrs>(
      [](double v) { return std::isnan(v) || v > 0 ? v : 0.0; },
      {/*f32=*/0, /*f64=*/0});
}
