// adaptivemaxpool2d's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/adaptivemaxpool2d/adaptivemaxpool2d.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/pool2d/adaptive_schema.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    AdaptivePool<AdaptiveMaxPool2dAttrs>("2-D adaptive max pooling")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(AdaptivePool<AdaptiveMaxPool2dBackwardDataAttrs>(
    "adaptivemaxpool2d's input gradient: dy to each window's first max"));

}  // namespace
}  // namespace ai3
