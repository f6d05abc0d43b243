// conv2d_backward_bias's declaration (core/op_schema.h): conv2d's attributes
// and weights (conv2d_declaration.h) and its "default" list.
#include "core/op_schema.h"
#include "core/ops/conv2d/backward/bias/conv2d_backward_bias.h"
#include "core/ops/conv2d/conv2d_declaration.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(Conv2dDeclaration<Conv2dBackwardBiasAttrs>(
                           "gradient of conv2d w.r.t. its bias; inputs "
                           "[grad_output, x, y], output (out,)")
                           .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
