// Every registered CPU linear_backward_data algorithm against the naive
// reference (linear_backward_testing.h) in both dtypes, with fused
// activations; and the bad inputs it must refuse.
#include "core/ops/linear/backward/data/linear_backward_data.h"
#include "core/ops/linear/backward/linear_backward_testing.h"

int main() {
  return ai3::testing::RunLinearGradTest<ai3::LinearBackwardDataAttrs>();
}
