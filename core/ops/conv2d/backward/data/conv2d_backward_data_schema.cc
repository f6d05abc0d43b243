// conv2d_backward_data's declaration (core/op_schema.h): conv2d's attributes
// and weights (conv2d_declaration.h) and its "default" list.
#include "core/op_schema.h"
#include "core/ops/conv2d/backward/data/conv2d_backward_data.h"
#include "core/ops/conv2d/conv2d_declaration.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    Conv2dDeclaration<Conv2dBackwardDataAttrs>(
        "gradient of conv2d w.r.t. x; inputs [grad_output, x, y], output shaped like x")
        .Default(Device::kCPU, {{"gemm"}, {"transposed"}, {"direct"}}));

}  // namespace
}  // namespace ai3
