// leaky_relu's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/leaky_relu/leaky_relu.h"

namespace ai3 {
namespace {

// leaky_relu's attributes, which its gradient takes as they are.
AI3_DECLARE_ATTRIBUTES(
        .Field("alpha", &A::alpha,
               "the slope below 0 (torch negative_slope, ONNX alpha)"));

AI3_REGISTER_OP_SCHEMA(
    Declare<LeakyReluAttrs>("x if x >= 0 else alpha * x, elementwise")
        .DirectOn({Device::kCPU, Device::kCUDA}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<LeakyReluBackwardDataAttrs>(
    "leaky_relu's input gradient: dy where x > 0, else alpha * dy"));

}  // namespace
}  // namespace ai3
