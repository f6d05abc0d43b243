// hardsigmoid's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/hardsigmoid/hardsigmoid.h"

namespace ai3 {
namespace {

using A = HardsigmoidAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("clamp(alpha * x + beta, 0, 1) elementwise")
        .Field("alpha", &A::alpha, "torch 1/6, ONNX 0.2")
        .Field("beta", &A::beta, "0.5 in both")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
