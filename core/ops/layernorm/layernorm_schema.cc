// layernorm's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/layernorm/layernorm.h"

namespace ai3 {
namespace {

// layernorm's attributes and weights, which its gradients take as they are.
AI3_DECLARE_ATTRIBUTES(
        .Attr(
            [] {
              AttrDecl d{"axes", AttrType::kInt};
              d.nullable = true;
              d.doc =
                  "trailing dims normalised; None: the weights' rank "
                  "(1 without weights)";
              return d;
            }(),
            [](A&, const AttrValue&) {})  // read by FromWeights
        .Field("eps", &A::eps, "added to the variance")
        .OptionalWeight("weight", "shaped like the normalised dims")
        .OptionalWeight("bias", "shaped like the normalised dims")
        .FromWeights([](A& a, const AttrMap& attrs, const WeightSlots& w) {
          a.has_weight = w[0].has_value();
          a.has_bias = w[1].has_value();
          const std::optional<Tensor>& any = a.has_weight ? w[0] : w[1];
          if (any) {
            a.normalized_shape = any->shape;
            a.dtype = any->dtype;
          }
          const AttrValue& axes = attrs.at("axes");
          a.axes = !internal::IsNone(axes)
                       ? internal::As<int64_t>(axes)
                       : (any ? static_cast<int64_t>(any->shape.size()) : 1);
        }));

AI3_REGISTER_OP_SCHEMA(
    Declare<LayerNormAttrs>(
        "normalisation over the last `axes` dims (nn.LayerNorm)")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(
    Declare<LayerNormBackwardDataAttrs>("layernorm's input gradient"));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<LayerNormBackwardWeightAttrs>(
    "layernorm's weight gradient: sum of dy xhat over the rows"));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<LayerNormBackwardBiasAttrs>(
    "layernorm's bias gradient: sum of dy over the rows"));

}  // namespace
}  // namespace ai3
