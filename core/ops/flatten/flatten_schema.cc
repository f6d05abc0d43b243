// flatten's declaration (core/op_schema.h).
#include <utility>

#include "core/op_schema.h"
#include "core/ops/flatten/flatten.h"

namespace ai3 {
namespace {

// flatten's attributes, which its gradient takes as they are.
template <class A>
OpDeclaration<A> Declare(const char* doc) {
  return std::move(
      OpDeclaration<A>(doc)
          .Field("start_dim", &A::start_dim,
                 "first dim (negative from the end)")
          .Field("end_dim", &A::end_dim, "last dim (negative from the end)"));
}

AI3_REGISTER_OP_SCHEMA(
    Declare<FlattenAttrs>("flattens dims start_dim..end_dim into one")
        .Default(Device::kCPU, {{"direct"}})
        .Default(Device::kCUDA, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    Declare<FlattenBackwardDataAttrs>("flatten's input gradient: dy in x's shape")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
