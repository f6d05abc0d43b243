// clamp's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/clamp/clamp.h"

namespace ai3 {
namespace {

using A = ClampAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("min(max(x, min), max) elementwise (ReLU6, Hardtanh); "
                     "NaN passes")
        .Field("min", &A::min, "lower bound (None: -inf)")
        .Field("max", &A::max, "upper bound (None: inf)")
        .Default(Device::kCPU, {{"direct"}})
        .Default(Device::kCUDA, {{"direct"}}));

}  // namespace
}  // namespace ai3
