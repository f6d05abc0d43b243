// roll's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/roll/roll.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(OpDeclaration<RollAttrs>("torch.roll(x, shifts, dims)")
                           .Field("shifts", &RollAttrs::shifts, "one per axis")
                           .Required()
                           .Field("axes", &RollAttrs::axes, "the dims rolled")
                           .Required()
                           .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
