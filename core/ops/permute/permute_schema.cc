// permute's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/permute/permute.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<PermuteAttrs>("output dim d is input dim dims[d]")
        .Field("dims", &PermuteAttrs::dims,
               "a full permutation, batch included (negative from the end)")
        .Required()
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
