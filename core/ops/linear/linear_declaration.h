// The attributes and weights of linear's declaration (core/op_schema.h), for
// linear itself and for its gradient ops (core/ops/linear/backward), which
// take exactly the forward's attributes and weights so that a frontend
// passes a linear layer's attributes through unchanged. `A` is LinearAttrs
// or a struct derived from it; the caller adds the "default" lists.
#ifndef AI3_CORE_OPS_LINEAR_LINEAR_DECLARATION_H_
#define AI3_CORE_OPS_LINEAR_LINEAR_DECLARATION_H_

#include "core/op_schema.h"
#include "core/ops/linear/linear.h"

namespace ai3 {

AI3_DECLARE_ATTRIBUTES_AS(LinearDeclaration,
                          .ActivationAttr()
                              .Weight("weight", "(out_features, in_features)")
                              .OptionalWeight("bias", "(out_features,)")
                              .FromWeights([](A& a, const AttrMap&,
                                              const WeightSlots& w) {
                                a.has_bias = w[1].has_value();
                                a.dtype = w[0]->dtype;
                                const Shape& shape =
                                    internal::WeightShape(w, 0, 2, "weight");
                                a.out_features = shape[0];
                                a.in_features = shape[1];
                              }));

}  // namespace ai3

#endif  // AI3_CORE_OPS_LINEAR_LINEAR_DECLARATION_H_
