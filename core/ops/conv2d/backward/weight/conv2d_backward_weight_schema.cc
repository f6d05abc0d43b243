// conv2d_backward_weight's declaration (core/op_schema.h): conv2d's attributes
// and weights (conv2d_declaration.h) and its "default" list.
#include "core/op_schema.h"
#include "core/ops/conv2d/backward/weight/conv2d_backward_weight.h"
#include "core/ops/conv2d/conv2d_declaration.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    Conv2dDeclaration<Conv2dBackwardWeightAttrs>(
        "gradient of conv2d w.r.t. its weight; inputs [grad_output, x, y], "
        "output (out, in / groups, kh, kw)")
        .Default(Device::kCPU, {{"gemm"}, {"direct"}}));

}  // namespace
}  // namespace ai3
