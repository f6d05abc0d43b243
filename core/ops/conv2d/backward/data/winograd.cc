// conv2d_backward_data "winograd": the transposed convolution
// (transposed_kernel.h) run by conv2d's winograd F(4x4, 3x3). The transposed
// convolution has stride 1 whatever the forward's, so this applies to any
// 3x3 layer of dilation 1; elsewhere it is refused with winograd's reason.
#include "core/ops/conv2d/backward/data/transposed_kernel.h"

namespace ai3 {
namespace {

constexpr char kWinograd[] = "winograd";

AI3_REGISTER_ALGORITHM(Conv2dBackwardDataAttrs, "winograd", Device::kCPU,
                       TransposedAlgorithm<kWinograd>);

}  // namespace
}  // namespace ai3
