// clamp's declaration (core/op_schema.h).
#include <utility>

#include "core/op_schema.h"
#include "core/ops/clamp/clamp.h"

namespace ai3 {
namespace {

// clamp's attributes, which its gradient takes as they are.
template <class A>
OpDeclaration<A> Declare(const char* doc) {
  return std::move(OpDeclaration<A>(doc)
                       .Field("min", &A::min, "lower bound (None: -inf)")
                       .Field("max", &A::max, "upper bound (None: inf)"));
}

AI3_REGISTER_OP_SCHEMA(
    Declare<ClampAttrs>("min(max(x, min), max) elementwise (ReLU6, Hardtanh); "
                        "NaN passes")
        .Default(Device::kCPU, {{"direct"}})
        .Default(Device::kCUDA, {{"direct"}}));
AI3_REGISTER_OP_SCHEMA(
    Declare<ClampBackwardDataAttrs>(
        "clamp's input gradient: dy strictly inside (min, max), else 0")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
