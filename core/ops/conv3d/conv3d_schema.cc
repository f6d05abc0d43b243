// conv3d's declaration (core/op_schema.h): attributes, weights, "default".
#include "core/op_schema.h"
#include "core/ops/conv3d/conv3d.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES(
        .Field("stride", &A::stride, "(d, h, w)")
        .Field("padding", &A::padding,
               "(front, back, top, bottom, left, right) zeros")
        .Field("dilation", &A::dilation, "(d, h, w)")
        .Field("groups", &A::groups, "input and output channels split in")
        .LayoutAttr()
        .ActivationAttr()
        .Weight("weight", "(out, in / groups, kd, kh, kw)")
        .OptionalWeight("bias", "(out,)")
        .FromWeights([](A& a, const AttrMap&, const WeightSlots& w) {
          const Shape& shape = internal::WeightShape(w, 0, 5, "weight");
          a.out_channels = shape[0];
          a.in_channels = CheckedMul(shape[1], a.groups, "in_channels");
          a.kernel = {shape[2], shape[3], shape[4]};
          a.has_bias = w[1].has_value();
          a.dtype = w[0]->dtype;
        }));

AI3_REGISTER_OP_SCHEMA(
    Declare<Conv3dAttrs>(
        "3-D convolution; weight (out, in / groups, kd, kh, kw)")
        .Default(Device::kCPU, {{"guess"}, {"gemm"}, {"direct"}}));
// Its gradients (conv3d.h), on the same attributes and weights.
AI3_REGISTER_OP_SCHEMA(
    Declare<Conv3dBackwardDataAttrs>("conv3d's input gradient: dy through the "
                                     "transposed convolution")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(Declare<Conv3dBackwardWeightAttrs>(
                           "conv3d's weight gradient: dy correlated with x")
                           .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(Declare<Conv3dBackwardBiasAttrs>(
                           "conv3d's bias gradient: dy summed per channel")
                           .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
