// relu_backward_data "direct": ReluGradFn (relu.h) per element through
// ElementwiseBackwardDirect, threaded from 2^15 elements as relu's forward.
#include "core/ops/elementwise.h"
#include "core/ops/relu/relu.h"

namespace ai3 {
namespace {

AI3_REGISTER_ALGORITHM(
    ReluBackwardDataAttrs, "direct", Device::kCPU,
    SharedElementwiseBackwardDirect<ReluBackwardDataAttrs, ReluGradFn,
                                    (1 << 15)>);

}  // namespace
}  // namespace ai3
