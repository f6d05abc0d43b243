// Every registered CPU linear_backward_bias algorithm against the naive
// reference (linear_backward_testing.h) in both dtypes, with fused
// activations; and the bad inputs it must refuse.
#include "core/ops/linear/backward/bias/linear_backward_bias.h"
#include "core/ops/linear/backward/linear_backward_testing.h"

int main() {
  return ai3::testing::RunLinearGradTest<ai3::LinearBackwardBiasAttrs>();
}
