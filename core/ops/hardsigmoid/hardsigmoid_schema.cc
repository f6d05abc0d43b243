// hardsigmoid's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/hardsigmoid/hardsigmoid.h"

namespace ai3 {
namespace {

// hardsigmoid's attributes, which its gradient takes as they are.
AI3_DECLARE_ATTRIBUTES(.Field("alpha", &A::alpha, "torch 1/6, ONNX 0.2")
                           .Field("beta", &A::beta, "0.5 in both"));

AI3_REGISTER_OP_SCHEMA(
    Declare<HardsigmoidAttrs>("clamp(alpha * x + beta, 0, 1) elementwise")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<HardsigmoidBackwardDataAttrs>(
    "hardsigmoid's input gradient: alpha dy inside (0, 1), else 0"));

}  // namespace
}  // namespace ai3
