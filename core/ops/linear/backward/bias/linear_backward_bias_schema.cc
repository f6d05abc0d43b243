// linear_backward_bias's declaration (core/op_schema.h): linear's attributes
// and weights (linear_declaration.h) and its "default" list.
#include "core/op_schema.h"
#include "core/ops/linear/backward/bias/linear_backward_bias.h"
#include "core/ops/linear/linear_declaration.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    LinearDeclaration<LinearBackwardBiasAttrs>(
        "gradient of linear w.r.t. its bias (over every leading dim); inputs "
        "[grad_output, x, y], output (out_features,)")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
