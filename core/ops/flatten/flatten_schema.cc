// flatten's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/flatten/flatten.h"

namespace ai3 {
namespace {

using A = FlattenAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("flattens dims start_dim..end_dim into one")
        .Field("start_dim", &A::start_dim, "first dim (negative from the end)")
        .Field("end_dim", &A::end_dim, "last dim (negative from the end)")
        .Default(Device::kCPU, {{"direct"}})
        .Default(Device::kCUDA, {{"direct"}}));

}  // namespace
}  // namespace ai3
