// groupnorm's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/groupnorm/groupnorm.h"

namespace ai3 {
namespace {

using A = GroupNormAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("normalisation over groups of channels (nn.GroupNorm; "
                     "groups 0 = one per channel: instance norm)")
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
        })
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
