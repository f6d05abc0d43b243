// sigmoid_backward_data "direct": SigmoidGradFn (sigmoid.h) per element through
// ElementwiseBackwardDirect, threaded from 2^13 elements as the forward.
#include "core/ops/elementwise.h"
#include "core/ops/sigmoid/sigmoid.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    SigmoidBackwardDataAttrs, "direct", Device::kCPU,
    SharedElementwiseBackwardDirect<SigmoidBackwardDataAttrs, SigmoidGradFn,
                                    (1 << 13)>);

}  // namespace
}  // namespace ai3
