// tanh against its definition through the shared elementwise-op test.
#include <cmath>

#include "core/ops/tanh/tanh.h"
#include "core/testing/unary_op_test.h"

int ai3::Main() {
  return ai3::testing::RunUnaryOpTest<ai3::TanhAttrs>(
      [](double v) { return std::tanh(v); });
}
