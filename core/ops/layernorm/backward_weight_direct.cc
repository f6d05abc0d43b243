// layernorm_backward_weight "direct": sums over the rows (ColumnSumKernel,
// column_sum_kernel.h).
#include "core/ops/layernorm/column_sum_kernel.h"
#include "core/ops/layernorm/layernorm.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    LayerNormBackwardWeightAttrs, "direct", Device::kCPU,
    ColumnSumDirect<LayerNormBackwardWeightAttrs, /*kCentered=*/true>);

}  // namespace
}  // namespace ai3
