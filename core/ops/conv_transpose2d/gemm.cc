// conv_transpose2d "gemm": conv2d_backward_data's "gemm": per image and
// group, columns = W^T x X (one ai3::Gemm, core/math/gemm.h), then col2im
// accumulates each output element's columns into it; a 1x1 stride-1
// unpadded layer is the GEMM alone.
#include "core/ops/conv_transpose2d/data_gradient_kernel.h"

namespace ai3 {
namespace {

constexpr char kGemm[] = "gemm";

AI3_REGISTER_ALGORITHM(ConvTranspose2dAttrs, "gemm", Device::kCPU,
                       ViaDataGradient<kGemm>);

}  // namespace
}  // namespace ai3
