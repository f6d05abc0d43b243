// hardswish against its definition through the shared elementwise-op test.
#include <algorithm>
#include <cmath>

#include "core/ops/hardswish/hardswish.h"
#include "core/testing/unary_op_test.h"

int ai3::Main() {
  return ai3::testing::RunUnaryOpTest<ai3::HardswishAttrs>([](double v) {
    if (std::isnan(v)) return v;
    return v * std::min(std::max(v + 3, 0.0), 6.0) / 6;
  });
}
