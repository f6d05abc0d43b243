// The declarations of maxpool2d, avgpool2d and adaptiveavgpool2d and of
// their input gradients (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/pool2d/adaptive_schema.h"
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

// Each pool's attributes, which its gradient takes as they are.
template <class A>
OpDeclaration<A> MaxPool(const char* doc) {
  return std::move(
      Windowed<A>(doc)
          .Pair("dilation", &A::dilation_h, &A::dilation_w, "(h, w)")
          .Field("ceil_mode", &A::ceil_mode, "round the output size up")
          .LayoutAttr());
}

template <class A>
OpDeclaration<A> AvgPool(const char* doc) {
  return std::move(
      Windowed<A>(doc)
          .Field("ceil_mode", &A::ceil_mode, "round the output size up")
          .Field("count_include_pad", &A::count_include_pad,
                 "divide by the window including its padding")
          .Field("divisor_override", &A::divisor_override,
                 "divide by this instead (0: no override)")
          .LayoutAttr());
}

AI3_REGISTER_OP_SCHEMA(MaxPool<MaxPool2dAttrs>("2-D max pooling")
                           .DirectOn({Device::kCPU, Device::kCUDA}));
AI3_REGISTER_OP_SCHEMA(AvgPool<AvgPool2dAttrs>("2-D average pooling")
                           .DirectOn({Device::kCPU, Device::kCUDA}));
AI3_REGISTER_OP_SCHEMA(
    AdaptivePool<AdaptiveAvgPool2dAttrs>("2-D adaptive average pooling")
        .DirectOn({Device::kCPU, Device::kCUDA}));

AI3_REGISTER_GRADIENT_SCHEMA(MaxPool<MaxPool2dBackwardDataAttrs>(
    "maxpool2d's input gradient: dy to each window's first maximum"));
AI3_REGISTER_GRADIENT_SCHEMA(AvgPool<AvgPool2dBackwardDataAttrs>(
    "avgpool2d's input gradient: dy / divisor over each window"));
AI3_REGISTER_GRADIENT_SCHEMA(AdaptivePool<AdaptiveAvgPool2dBackwardDataAttrs>(
    "adaptiveavgpool2d's input gradient: dy / size over each window"));

}  // namespace
}  // namespace ai3
