// gelu's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/gelu/gelu.h"

namespace ai3 {
namespace {

// gelu's attributes, which its gradient takes as they are.
AI3_DECLARE_ATTRIBUTES(.OneOf("approximate", &A::approximate, {"none", "tanh"},
                              "'tanh' for the tanh approximation"));

AI3_REGISTER_OP_SCHEMA(
    Declare<GeluAttrs>("x * Phi(x) elementwise, exact or tanh")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(
    Declare<GeluBackwardDataAttrs>("gelu's input gradient, exact or tanh"));

}  // namespace
}  // namespace ai3
