// layernorm_backward_data "direct": NormDataKernel (norm_gradients.h).
#include "core/ops/layernorm/layernorm.h"
#include "core/ops/layernorm/norm_gradients.h"
#include "core/registry.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(LayerNormBackwardDataAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<LayerNormBackwardDataAttrs,
                                       NormDataKernel</*kCentered=*/true>>);

}  // namespace
}  // namespace ai3
