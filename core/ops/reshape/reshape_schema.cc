// reshape's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/reshape/reshape.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<ReshapeAttrs>("the elements in order under another shape")
        .Field("shape", &ReshapeAttrs::shape,
               "batch included; -1 inferred (once), 0 copies the input's dim")
        .Required()
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
