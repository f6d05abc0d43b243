// sigmoid against its definition through the shared elementwise-op test.
#include <cmath>

#include "core/ops/sigmoid/sigmoid.h"
#include "core/testing/unary_op_test.h"

int ai3::Main() {
  return ai3::testing::RunUnaryOpTest<ai3::SigmoidAttrs>(
      [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
}
