// pad2d's declaration (core/op_schema.h).
#include <string>

#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/pad2d/pad2d.h"

namespace ai3 {
namespace {

// pad2d's attributes, which its gradient takes as they are.
AI3_DECLARE_ATTRIBUTES(
        .Pads("padding",
              {&A::pad_top, &A::pad_bottom, &A::pad_left, &A::pad_right},
              "(top, bottom, left, right)")
        .Required()
        .Field("value", &A::value, "the padding's value (constant mode)")
        .OneOf("mode", &A::mode,
               {"constant", "reflect", "replicate", "circular"},
               "what the padding holds: value, the mirrored, repeated or "
               "tiled input")
        .LayoutAttr());

AI3_REGISTER_OP_SCHEMA(
    Declare<Pad2dAttrs>(
        "constant, reflect, replicate or circular padding of H and W of a "
        "rank-4 tensor")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<Pad2dBackwardDataAttrs>(
    "pad2d's input gradient: dy unpadded, plus the padding's copies"));

}  // namespace
}  // namespace ai3
