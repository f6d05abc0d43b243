// Every registered CPU conv2d_backward_data algorithm against the naive
// reference (conv2d_backward_testing.h) over the grid, both layouts and
// dtypes, with fused activations; and the bad inputs it must refuse.
#include "core/ops/conv2d/backward/data/conv2d_backward_data.h"
#include "core/ops/conv2d/backward/conv2d_backward_testing.h"

int main() {
  return ai3::testing::RunConvGradTest<ai3::Conv2dBackwardDataAttrs>();
}
