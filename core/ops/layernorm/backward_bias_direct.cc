// layernorm_backward_bias "direct": sums over the rows (ColumnSumKernel,
// column_sum_kernel.h).
#include "core/ops/layernorm/column_sum_kernel.h"
#include "core/ops/layernorm/layernorm.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    LayerNormBackwardBiasAttrs, "direct", Device::kCPU,
    ColumnSumDirect<LayerNormBackwardBiasAttrs, /*kCentered=*/false>);

}  // namespace
}  // namespace ai3
