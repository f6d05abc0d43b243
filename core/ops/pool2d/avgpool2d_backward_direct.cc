// avgpool2d_backward_data "direct": dy / divisor spread over each window,
// the divisor as the forward's (pool2d_backward.h).
#include "core/ops/pool2d/pool2d.h"
#include "core/ops/pool2d/pool2d_backward.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    AvgPool2dBackwardDataAttrs, "direct", Device::kCPU,
    PoolBackwardDirect<AvgPool2dBackwardDataAttrs, AvgBackwardLoops<AvgTaps>>);

}  // namespace
}  // namespace ai3
