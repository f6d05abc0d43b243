// softmax's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/softmax/softmax.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(OpDeclaration<SoftmaxAttrs>("numerically stable softmax along axis")
                           .Field("axis", &SoftmaxAttrs::axis,
                                  "memory-order axis (negative from the end)")
                           .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
