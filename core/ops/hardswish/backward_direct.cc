// hardswish_backward_data "direct": HardswishGradFn (hardswish.h) per element through
// ElementwiseBackwardDirect, threaded from 2^15 elements as the forward.
#include "core/ops/elementwise.h"
#include "core/ops/hardswish/hardswish.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    HardswishBackwardDataAttrs, "direct", Device::kCPU,
    SharedElementwiseBackwardDirect<HardswishBackwardDataAttrs, HardswishGradFn,
                                    (1 << 15)>);

}  // namespace
}  // namespace ai3
