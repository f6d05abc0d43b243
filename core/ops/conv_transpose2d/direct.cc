// conv_transpose2d "direct": conv2d_backward_data's "direct", the
// definition as gather loops (each output element sums the input elements
// whose kernel taps land on it, so no two threads write one element).
#include "core/ops/conv_transpose2d/data_gradient_kernel.h"

namespace ai3 {
namespace {

constexpr char kDirect[] = "direct";

AI3_REGISTER_ALGORITHM(ConvTranspose2dAttrs, "direct", Device::kCPU,
                       ViaDataGradient<kDirect>);

}  // namespace
}  // namespace ai3
