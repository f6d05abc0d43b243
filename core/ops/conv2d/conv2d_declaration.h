// The attributes and weights of conv2d's declaration (core/op_schema.h), for
// conv2d itself and for its gradient ops (core/ops/conv2d/backward), which
// take exactly the forward's attributes and weights so that a frontend
// passes a conv2d layer's attributes through unchanged. `A` is Conv2dAttrs
// or a struct derived from it; the caller adds the "default" lists.
#ifndef AI3_CORE_OPS_CONV2D_CONV2D_DECLARATION_H_
#define AI3_CORE_OPS_CONV2D_CONV2D_DECLARATION_H_

#include "core/op_schema.h"
#include "core/ops/conv2d/conv2d.h"

namespace ai3 {

AI3_DECLARE_ATTRIBUTES_AS(
    Conv2dDeclaration,
    .Pair("stride", &A::stride_h, &A::stride_w, "(h, w)")
        .Pads("padding",
              {&A::pad_top, &A::pad_bottom, &A::pad_left, &A::pad_right},
              "(top, bottom, left, right) zeros")
        .Pair("dilation", &A::dilation_h, &A::dilation_w, "(h, w)")
        .Field("groups", &A::groups, "input and output channels split in")
        .LayoutAttr()
        .ActivationAttr()
        .Weight("weight", "(out, in / groups, kh, kw)")
        .OptionalWeight("bias", "(out,)")
        .FromWeights([](A& a, const AttrMap&, const WeightSlots& w) {
          const Shape& shape = internal::WeightShape(w, 0, 4, "weight");
          a.out_channels = shape[0];
          a.in_channels = CheckedMul(shape[1], a.groups, "in_channels");
          a.kernel_h = shape[2];
          a.kernel_w = shape[3];
          a.has_bias = w[1].has_value();
          a.dtype = w[0]->dtype;
        }));

}  // namespace ai3

#endif  // AI3_CORE_OPS_CONV2D_CONV2D_DECLARATION_H_
