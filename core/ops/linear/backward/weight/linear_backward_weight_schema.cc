// linear_backward_weight's declaration (core/op_schema.h): linear's attributes
// and weights (linear_declaration.h) and its "default" list.
#include "core/op_schema.h"
#include "core/ops/linear/backward/weight/linear_backward_weight.h"
#include "core/ops/linear/linear_declaration.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    LinearDeclaration<LinearBackwardWeightAttrs>(
        "gradient of linear w.r.t. its weight (over every leading dim of x); "
        "inputs [grad_output, x, y], output (out_features, in_features)")
        .Default(Device::kCPU, {{"gemm"}, {"direct"}}));

}  // namespace
}  // namespace ai3
