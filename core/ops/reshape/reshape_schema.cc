// reshape's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/reshape/reshape.h"

namespace ai3 {
namespace {

// reshape's attributes, which its gradient takes as they are.
AI3_DECLARE_ATTRIBUTES(
        .Field("shape", &A::shape,
               "batch included; -1 inferred (once), 0 copies the input's dim")
        .Required());

AI3_REGISTER_OP_SCHEMA(
    Declare<ReshapeAttrs>("the elements in order under another shape")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<ReshapeBackwardDataAttrs>(
    "reshape's input gradient: dy in x's shape"));

}  // namespace
}  // namespace ai3
