// permute's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/elementwise_schema.h"
#include "core/ops/permute/permute.h"

namespace ai3 {
namespace {

// permute's attributes, which its gradient takes as they are.
AI3_DECLARE_ATTRIBUTES(
        .Field("dims", &A::dims,
               "a full permutation, batch included (negative from the end)")
        .Required());

AI3_REGISTER_OP_SCHEMA(
    Declare<PermuteAttrs>("output dim d is input dim dims[d]")
        .Default(Device::kCPU, {{"direct"}}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<PermuteBackwardDataAttrs>(
    "permute's input gradient: dy permuted back"));

}  // namespace
}  // namespace ai3
