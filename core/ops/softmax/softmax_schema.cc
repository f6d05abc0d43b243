// softmax's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/softmax/axis_schema.h"
#include "core/ops/softmax/softmax.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    DeclareAxis<SoftmaxAttrs>("numerically stable softmax along axis")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    DeclareAxis<SoftmaxBackwardDataAttrs>(
        "softmax's input gradient: y (dy - sum(dy y)) along axis")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
