// linear_backward_data's declaration (core/op_schema.h): linear's attributes
// and weights (linear_declaration.h) and its "default" list.
#include "core/op_schema.h"
#include "core/ops/linear/backward/data/linear_backward_data.h"
#include "core/ops/linear/linear_declaration.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(LinearDeclaration<LinearBackwardDataAttrs>(
                           "gradient of linear w.r.t. x; inputs [grad_output, "
                           "x, y], output shaped like x")
                           .Default(Device::kCPU, {{"gemm"}, {"direct"}}));

}  // namespace
}  // namespace ai3
