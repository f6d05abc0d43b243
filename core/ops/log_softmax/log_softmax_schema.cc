// log_softmax's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/log_softmax/log_softmax.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(OpDeclaration<LogSoftmaxAttrs>("log(softmax(x)) along axis, computed stably")
                           .Field("axis", &LogSoftmaxAttrs::axis,
                                  "memory-order axis (negative from the end)")
                           .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
