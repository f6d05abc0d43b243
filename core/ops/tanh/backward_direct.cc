// tanh_backward_data "direct": TanhGradFn (tanh.h) per element through
// ElementwiseBackwardDirect, threaded from 2^13 elements as the forward.
#include "core/ops/elementwise.h"
#include "core/ops/tanh/tanh.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    TanhBackwardDataAttrs, "direct", Device::kCPU,
    SharedElementwiseBackwardDirect<TanhBackwardDataAttrs, TanhGradFn,
                                    (1 << 13)>);

}  // namespace
}  // namespace ai3
