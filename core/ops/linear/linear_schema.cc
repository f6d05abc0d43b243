// linear's declaration (core/op_schema.h): y = x W^T + b over the last dim.
#include "core/op_schema.h"
#include "core/ops/linear/linear.h"

namespace ai3 {
namespace {

using A = LinearAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("y = x W^T + b over the last dim")
        .ActivationAttr()
        .Weight("weight", "(out_features, in_features)")
        .OptionalWeight("bias", "(out_features,)")
        .FromWeights([](A& a, const AttrMap&, const WeightSlots& w) {
          a.has_bias = w[1].has_value();
          a.dtype = w[0]->dtype;
          const Shape& shape = internal::WeightShape(w, 0, 2, "weight");
          a.out_features = shape[0];
          a.in_features = shape[1];
        })
        .Default(Device::kCPU, {{"gemm"}, {"direct"}})
        .Default(Device::kCUDA, {{"gemm"}}));

}  // namespace
}  // namespace ai3
