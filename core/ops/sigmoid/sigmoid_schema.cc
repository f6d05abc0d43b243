// sigmoid's declaration (core/op_schema.h): no attributes, no weights;
// "direct" is its only algorithm, on every device that has one.
#include "core/op_schema.h"
#include "core/ops/sigmoid/sigmoid.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(OpDeclaration<SigmoidAttrs>("1 / (1 + exp(-x)) elementwise")
                           .Default(Device::kCPU, {{"direct"}})
                           .Default(Device::kCUDA, {{"direct"}}));

}  // namespace
}  // namespace ai3
