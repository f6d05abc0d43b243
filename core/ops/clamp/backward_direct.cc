// clamp_backward_data "direct": ClampGradFn (clamp.h) per element through
// ElementwiseBackwardDirect, threaded from 2^15 elements as the forward.
#include "core/ops/clamp/clamp.h"
#include "core/ops/elementwise.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    ClampBackwardDataAttrs, "direct", Device::kCPU,
    SharedElementwiseBackwardDirect<ClampBackwardDataAttrs, ClampGradFn,
                                    (1 << 15)>);

}  // namespace
}  // namespace ai3
