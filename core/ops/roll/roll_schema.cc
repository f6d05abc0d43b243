// roll's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/roll/roll.h"

namespace ai3 {
namespace {

// roll's attributes, which its gradient takes as they are.
AI3_DECLARE_ATTRIBUTES(.Field("shifts", &A::shifts, "one per axis")
                           .Required()
                           .Field("axes", &A::axes, "the dims rolled")
                           .Required());

AI3_REGISTER_OP_SCHEMA(Declare<RollAttrs>("torch.roll(x, shifts, dims)")
                           .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<RollBackwardDataAttrs>(
    "roll's input gradient: dy rolled back by -shifts"));

}  // namespace
}  // namespace ai3
