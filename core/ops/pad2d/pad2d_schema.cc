// pad2d's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/pad2d/pad2d.h"

namespace ai3 {
namespace {

using A = Pad2dAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("constant padding of H and W of a rank-4 tensor")
        .Pads("padding", {&A::pad_top, &A::pad_bottom, &A::pad_left,
                          &A::pad_right},
              "(top, bottom, left, right)")
        .Required()
        .Field("value", &A::value, "the padding's value")
        .LayoutAttr()
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
