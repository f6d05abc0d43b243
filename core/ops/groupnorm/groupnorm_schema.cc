// groupnorm's declaration (core/op_schema.h); its gradients take its
// attributes and weights as they are.
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/groupnorm/groupnorm.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES(
        .Field("groups", &A::groups,
               "channel groups; 0: one per channel (instance norm)")
        .Field("eps", &A::eps, "added to the variance")
        .LayoutAttr()
        .OptionalWeight("weight", "(C,)")
        .OptionalWeight("bias", "(C,)")
        .FromWeights([](A& a, const AttrMap&, const WeightSlots& w) {
          a.has_weight = w[0].has_value();
          a.has_bias = w[1].has_value();
          const std::optional<Tensor>& any = a.has_weight ? w[0] : w[1];
          if (any) {
            a.channels = any->shape.empty() ? 0 : any->shape[0];
            a.dtype = any->dtype;
          }
        }));

AI3_REGISTER_OP_SCHEMA(
    Declare<GroupNormAttrs>("normalisation over groups of channels "
                            "(nn.GroupNorm; groups 0 = one per channel: "
                            "instance norm)")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(
    Declare<GroupNormBackwardDataAttrs>("groupnorm's input gradient"));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<GroupNormBackwardWeightAttrs>(
    "groupnorm's weight gradient: per channel, the sum of dy xhat"));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<GroupNormBackwardBiasAttrs>(
    "groupnorm's bias gradient: per channel, the sum of dy"));

}  // namespace
}  // namespace ai3
