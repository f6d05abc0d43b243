// silu against its definition through the shared elementwise-op test.
#include <cmath>

#include "core/ops/silu/silu.h"
#include "core/testing/unary_op_test.h"

int ai3::Main() {
  return ai3::testing::RunUnaryOpTest<ai3::SiluAttrs>(
      [](double v) { return v / (1.0 + std::exp(-v)); });
}
