// batchnorm2d_backward_weight "direct": per-channel sums (ChannelSumKernel,
// channel_sum_kernel.h).
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/ops/batchnorm2d/channel_sum_kernel.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    BatchNorm2dBackwardWeightAttrs, "direct", Device::kCPU,
    ChannelSumDirect<BatchNorm2dBackwardWeightAttrs, /*kCentered=*/true>);

}  // namespace
}  // namespace ai3
