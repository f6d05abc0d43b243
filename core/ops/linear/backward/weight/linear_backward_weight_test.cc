// Every registered CPU linear_backward_weight algorithm against the naive
// reference (linear_backward_testing.h) in both dtypes, with fused
// activations; and the bad inputs it must refuse.
#include "core/ops/linear/backward/weight/linear_backward_weight.h"
#include "core/ops/linear/backward/linear_backward_testing.h"

int main() {
  return ai3::testing::RunLinearGradTest<ai3::LinearBackwardWeightAttrs>();
}
