// adaptivemaxpool2d's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/adaptivemaxpool2d/adaptivemaxpool2d.h"

namespace ai3 {
namespace {

using A = AdaptiveMaxPool2dAttrs;

AI3_REGISTER_OP_SCHEMA(OpDeclaration<A>("2-D adaptive max pooling")
                           .Pair("output_size", &A::output_h, &A::output_w,
                                 "(h, w)")
                           .Required()
                           .LayoutAttr()
                           .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
