// conv_transpose2d "zero_insert": conv2d_backward_data's "transposed": the
// input with stride - 1 zeros inserted between its rows and columns,
// re-padded by (kernel - 1)*dilation - pad, convolved at stride 1 with the
// flipped kernel, its in/out channels swapped per group, by whichever
// forward conv2d algorithm conv2d's "default" picks for that convolution
// (at stride 1 with pads within the kernel's reach, the input is read in
// place, with no zeros inserted).
#include "core/ops/conv_transpose2d/data_gradient_kernel.h"

namespace ai3 {
namespace {

constexpr char kTransposed[] = "transposed";

AI3_REGISTER_ALGORITHM(ConvTranspose2dAttrs, "zero_insert", Device::kCPU,
                       ViaDataGradient<kTransposed>);

}  // namespace
}  // namespace ai3
