// matmul's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/matmul/matmul.h"

namespace ai3 {
namespace {

using A = MatmulAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("x0 @ x1 as torch.matmul (batched, broadcast batch "
                     "dims), or x @ other")
        .OptionalWeight("other",
                        "the constant right operand (the layer then reads 1 "
                        "input)")
        .FromWeights([](A& a, const AttrMap&, const WeightSlots& w) {
          a.has_other = w[0].has_value();
          if (a.has_other) {
            a.other_shape = w[0]->shape;
            a.other_dtype = w[0]->dtype;
          }
        })
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
