// batchnorm2d_backward_bias "direct": per-channel sums (ChannelSumKernel,
// channel_sum_kernel.h).
#include "core/ops/batchnorm2d/batchnorm2d.h"
#include "core/ops/batchnorm2d/channel_sum_kernel.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    BatchNorm2dBackwardBiasAttrs, "direct", Device::kCPU,
    ChannelSumDirect<BatchNorm2dBackwardBiasAttrs, /*kCentered=*/false>);

}  // namespace
}  // namespace ai3
