// log_softmax's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/log_softmax/log_softmax.h"
#include "core/ops/softmax/axis_schema.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    DeclareAxis<LogSoftmaxAttrs>("log(softmax(x)) along axis, computed stably")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    DeclareAxis<LogSoftmaxBackwardDataAttrs>(
        "log_softmax's input gradient: dy - exp(y) sum(dy) along axis")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
