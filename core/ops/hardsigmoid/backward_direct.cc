// hardsigmoid_backward_data "direct": HardsigmoidGradFn (hardsigmoid.h) per element through
// ElementwiseBackwardDirect, threaded from 2^15 elements as the forward.
#include "core/ops/elementwise.h"
#include "core/ops/hardsigmoid/hardsigmoid.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    HardsigmoidBackwardDataAttrs, "direct", Device::kCPU,
    SharedElementwiseBackwardDirect<HardsigmoidBackwardDataAttrs, HardsigmoidGradFn,
                                    (1 << 15)>);

}  // namespace
}  // namespace ai3
