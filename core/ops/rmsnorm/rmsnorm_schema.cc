// rmsnorm's declaration (core/op_schema.h): layernorm's axes and eps, and
// one optional weight; its gradients take them as they are.
#include <optional>

#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/rmsnorm/rmsnorm.h"

namespace ai3 {
namespace {

AI3_DECLARE_ATTRIBUTES(
        .Attr(
            [] {
              AttrDecl d{"axes", AttrType::kInt};
              d.nullable = true;
              d.doc =
                  "trailing dims normalised; None: the weight's rank "
                  "(1 without a weight)";
              return d;
            }(),
            [](A&, const AttrValue&) {})  // read by FromWeights
        .Field("eps", &A::eps, "added to the mean square")
        .OptionalWeight("weight", "shaped like the normalised dims")
        .FromWeights([](A& a, const AttrMap& attrs, const WeightSlots& w) {
          a.has_weight = w[0].has_value();
          if (a.has_weight) {
            a.normalized_shape = w[0]->shape;
            a.dtype = w[0]->dtype;
          }
          const AttrValue& axes = attrs.at("axes");
          a.axes =
              !internal::IsNone(axes)
                  ? internal::As<int64_t>(axes)
                  : (a.has_weight ? static_cast<int64_t>(w[0]->shape.size())
                                  : 1);
        }));

AI3_REGISTER_OP_SCHEMA(
    Declare<RmsNormAttrs>("root-mean-square normalisation over the last "
                          "`axes` dims (nn.RMSNorm)")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(
    Declare<RmsNormBackwardDataAttrs>("rmsnorm's input gradient"));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<RmsNormBackwardWeightAttrs>(
    "rmsnorm's weight gradient: sum of dy xhat over the rows"));

}  // namespace
}  // namespace ai3
