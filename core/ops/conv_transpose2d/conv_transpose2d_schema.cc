// conv_transpose2d's declaration (core/op_schema.h), and its gradients'.
#include "core/op_schema.h"
#include "core/ops/conv_transpose2d/conv_transpose2d.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES(
        .Pair("stride", &A::stride_h, &A::stride_w, "(h, w)")
        .Pads("padding",
              {&A::pad_top, &A::pad_bottom, &A::pad_left, &A::pad_right},
              "(top, bottom, left, right) rows/columns cut from the output")
        .Pair("output_padding", &A::output_padding_h, &A::output_padding_w,
              "(h, w) rows/columns added at the bottom/right")
        .Pair("dilation", &A::dilation_h, &A::dilation_w, "(h, w)")
        .Field("groups", &A::groups, "input and output channels split in")
        .LayoutAttr()
        .Weight("weight", "(in, out / groups, kh, kw)")
        .OptionalWeight("bias", "(out,)")
        .FromWeights([](A& a, const AttrMap&, const WeightSlots& w) {
          const Shape& shape = internal::WeightShape(w, 0, 4, "weight");
          a.in_channels = shape[0];
          a.out_channels = CheckedMul(shape[1], a.groups, "out_channels");
          a.kernel_h = shape[2];
          a.kernel_w = shape[3];
          a.has_bias = w[1].has_value();
          a.dtype = w[0]->dtype;
        }));

AI3_REGISTER_OP_SCHEMA(
    Declare<ConvTranspose2dAttrs>(
        "2-D transposed convolution; weight (in, out / groups, kh, kw)")
        // gemm: one GEMM per image and group and a col2im; zero_insert
        // runs a forward conv2d (at stride 1 in place, else over a
        // zero-inserted copy of the input).
        .Default(Device::kCPU, {{"gemm"}, {"zero_insert"}, {"direct"}}));
// Its gradients (conv_transpose2d.h), on the same attributes and weights.
AI3_REGISTER_OP_SCHEMA(
    Declare<ConvTranspose2dBackwardDataAttrs>(
        "conv_transpose2d's input gradient: the forward of the conv2d it is "
        "the data gradient of, on dy")
        .Default(Device::kCPU, {{"gemm"}, {"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    Declare<ConvTranspose2dBackwardWeightAttrs>(
        "conv_transpose2d's weight gradient: that conv2d's, dy as its input "
        "and x as its output's gradient")
        .Default(Device::kCPU, {{"gemm"}, {"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    Declare<ConvTranspose2dBackwardBiasAttrs>(
        "conv_transpose2d's bias gradient: dy summed per channel")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
