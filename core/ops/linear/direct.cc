// linear "direct": the products summed in place, register-blocked, with no
// packing of the input and no library GEMM: conv2d's "direct" on the layer
// as a 1x1 convolution (pointwise_conv_kernel.h). Its unpadded NHWC 1x1
// form holds a block of output features in the vector lanes times a run of
// rows in registers for the whole sum over the input features, from weights
// packed once at Prepare (core/ops/conv2d/direct_kernel.h). float32 and
// float64, any activation linear fuses.
#include "core/ops/linear/linear.h"
#include "core/ops/linear/pointwise_conv_kernel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

constexpr char kDirect[] = "direct";

AI3_REGISTER_ALGORITHM(LinearAttrs, kDirect, Device::kCPU,
                       PointwiseConvAlgorithm<kDirect>);

}  // namespace
}  // namespace ai3
