// leaky_relu's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/leaky_relu/leaky_relu.h"

namespace ai3 {
namespace {

using A = LeakyReluAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("x if x >= 0 else alpha * x, elementwise")
        .Field("alpha", &A::alpha,
               "the slope below 0 (torch negative_slope, ONNX alpha)")
        .Default(Device::kCPU, {{"direct"}})
        .Default(Device::kCUDA, {{"direct"}}));

}  // namespace
}  // namespace ai3
