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

// Each pool's attributes, which its gradient takes as they are.
template <class A>
OpDeclaration<A> MaxPool(const char* doc) {
  return std::move(
      Windowed<A>(doc).Field("dilation", &A::dilation, "(d, h, w)"));
}
template <class A>
OpDeclaration<A> AvgPool(const char* doc) {
  return std::move(Windowed<A>(doc)
                       .Field("count_include_pad", &A::count_include_pad,
                              "divide by the window including its padding")
                       .Field("divisor_override", &A::divisor_override,
                              "divide by this instead (0: no override)"));
}

AI3_REGISTER_OP_SCHEMA(MaxPool<MaxPool3dAttrs>("3-D max pooling")
                           .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(AvgPool<AvgPool3dAttrs>("3-D average pooling")
                           .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    MaxPool<MaxPool3dBackwardDataAttrs>(
        "maxpool3d's input gradient: dy to each window's first maximum")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    AvgPool<AvgPool3dBackwardDataAttrs>(
        "avgpool3d's input gradient: dy / divisor to each window's taps")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
