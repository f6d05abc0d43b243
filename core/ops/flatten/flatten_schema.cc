// flatten's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/flatten/flatten.h"

namespace ai3 {
namespace {

// flatten's attributes, which its gradient takes as they are.
AI3_DECLARE_ATTRIBUTES(
        .Field("start_dim", &A::start_dim, "first dim (negative from the end)")
        .Field("end_dim", &A::end_dim, "last dim (negative from the end)"));

AI3_REGISTER_OP_SCHEMA(
    Declare<FlattenAttrs>("flattens dims start_dim..end_dim into one")
        .DirectOn({Device::kCPU, Device::kCUDA}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<FlattenBackwardDataAttrs>(
    "flatten's input gradient: dy in x's shape"));

}  // namespace
}  // namespace ai3
