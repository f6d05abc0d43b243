// adaptivemaxpool2d's declaration (core/op_schema.h).
#include <utility>

#include "core/op_schema.h"
#include "core/ops/adaptivemaxpool2d/adaptivemaxpool2d.h"

namespace ai3 {
namespace {

// adaptivemaxpool2d's attributes, which its gradient takes as they are.
template <class A>
OpDeclaration<A> Declare(const char* doc) {
  return std::move(OpDeclaration<A>(doc)
                       .Pair("output_size", &A::output_h, &A::output_w,
                             "(h, w)")
                       .Required()
                       .LayoutAttr());
}

AI3_REGISTER_OP_SCHEMA(Declare<AdaptiveMaxPool2dAttrs>(
                           "2-D adaptive max pooling")
                           .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    Declare<AdaptiveMaxPool2dBackwardDataAttrs>(
        "adaptivemaxpool2d's input gradient: dy to each window's first max")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
