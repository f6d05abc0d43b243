// layernorm_backward_weight and layernorm_backward_bias "direct", one
// kernel: ColumnSumKernel (norm_gradients.h), of dy xhat or of dy.
#include "core/ops/layernorm/layernorm.h"
#include "core/ops/layernorm/norm_gradients.h"
#include "core/registry.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(LayerNormBackwardWeightAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<LayerNormBackwardWeightAttrs,
                                       ColumnSumKernel</*kXhat=*/true>>);
AI3_REGISTER_ALGORITHM(LayerNormBackwardBiasAttrs, "direct", Device::kCPU,
                       KernelAlgorithm<LayerNormBackwardBiasAttrs,
                                       ColumnSumKernel</*kXhat=*/false>>);

}  // namespace
}  // namespace ai3
