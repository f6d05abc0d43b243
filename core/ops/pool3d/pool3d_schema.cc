// The declarations of maxpool3d and avgpool3d (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/pool3d/pool3d.h"

namespace ai3 {
namespace {

// kernel, then stride (None: the kernel), then padding: what both pools
// take first.
template <class A>
OpDeclaration<A> Windowed(const char* doc) {
  AttrDecl stride{"stride", AttrType::kInts};
  stride.nullable = true;
  stride.size = 3;
  stride.doc = "(d, h, w); None: the kernel size";
  return std::move(
      OpDeclaration<A>(doc)
          .Field("kernel", &A::kernel, "(d, h, w)")
          .Required()
          .Attr(stride,
                [](A& a, const AttrValue& v) {
                  a.stride = internal::IsNone(v)
                                 ? a.kernel
                                 : internal::As<std::vector<int64_t>>(v);
                })
          .Field("padding", &A::padding,
                 "(front, back, top, bottom, left, right), never counted as "
                 "a maximum")
          .Field("ceil_mode", &A::ceil_mode, "round the output size up")
          .LayoutAttr());
}

AI3_REGISTER_OP_SCHEMA(Windowed<MaxPool3dAttrs>("3-D max pooling")
                           .Field("dilation", &MaxPool3dAttrs::dilation,
                                  "(d, h, w)")
                           .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(Windowed<AvgPool3dAttrs>("3-D average pooling")
                           .Field("count_include_pad",
                                  &AvgPool3dAttrs::count_include_pad,
                                  "divide by the window including its padding")
                           .Field("divisor_override",
                                  &AvgPool3dAttrs::divisor_override,
                                  "divide by this instead (0: no override)")
                           .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
