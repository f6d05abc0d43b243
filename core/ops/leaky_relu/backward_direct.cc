// leaky_relu_backward_data "direct": LeakyReluGradFn (leaky_relu.h) per element through
// ElementwiseBackwardDirect, threaded from 2^15 elements as the forward.
#include "core/ops/elementwise.h"
#include "core/ops/leaky_relu/leaky_relu.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    LeakyReluBackwardDataAttrs, "direct", Device::kCPU,
    SharedElementwiseBackwardDirect<LeakyReluBackwardDataAttrs, LeakyReluGradFn,
                                    (1 << 15)>);

}  // namespace
}  // namespace ai3
