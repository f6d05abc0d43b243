// The declarations of maxpool2d, avgpool2d and adaptiveavgpool2d
// (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/pool2d/pool2d.h"

namespace ai3 {
namespace {

// kernel, then stride (None: the kernel), then padding: what both windowed
// pools take first.
template <class A>
OpDeclaration<A> Windowed(const char* doc) {
  AttrDecl stride{"stride", AttrType::kInts};
  stride.nullable = true;
  stride.size = 2;
  stride.doc = "(h, w); None: the kernel size";
  return std::move(
      OpDeclaration<A>(doc)
          .Pair("kernel", &A::kernel_h, &A::kernel_w, "(h, w)")
          .Required()
          .Attr(stride,
                [](A& a, const AttrValue& v) {
                  if (internal::IsNone(v)) {
                    a.stride_h = a.kernel_h;
                    a.stride_w = a.kernel_w;
                    return;
                  }
                  const auto& s = internal::As<std::vector<int64_t>>(v);
                  a.stride_h = s[0];
                  a.stride_w = s[1];
                })
          .Pads("padding",
                {&A::pad_top, &A::pad_bottom, &A::pad_left, &A::pad_right},
                "(top, bottom, left, right), never counted as a maximum"));
}

AI3_REGISTER_OP_SCHEMA(
    Windowed<MaxPool2dAttrs>("2-D max pooling")
        .Pair("dilation", &MaxPool2dAttrs::dilation_h,
              &MaxPool2dAttrs::dilation_w, "(h, w)")
        .Field("ceil_mode", &MaxPool2dAttrs::ceil_mode,
               "round the output size up")
        .LayoutAttr()
        .Default(Device::kCPU, {{"direct"}})
        .Default(Device::kCUDA, {{"direct"}}));

AI3_REGISTER_OP_SCHEMA(
    Windowed<AvgPool2dAttrs>("2-D average pooling")
        .Field("ceil_mode", &AvgPool2dAttrs::ceil_mode,
               "round the output size up")
        .Field("count_include_pad", &AvgPool2dAttrs::count_include_pad,
               "divide by the window including its padding")
        .Field("divisor_override", &AvgPool2dAttrs::divisor_override,
               "divide by this instead (0: no override)")
        .LayoutAttr()
        .Default(Device::kCPU, {{"direct"}})
        .Default(Device::kCUDA, {{"direct"}}));

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<AdaptiveAvgPool2dAttrs>("2-D adaptive average pooling")
        .Pair("output_size", &AdaptiveAvgPool2dAttrs::output_h,
              &AdaptiveAvgPool2dAttrs::output_w, "(h, w)")
        .Required()
        .LayoutAttr()
        .Default(Device::kCPU, {{"direct"}})
        .Default(Device::kCUDA, {{"direct"}}));

}  // namespace
}  // namespace ai3
