// clamp's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/clamp/clamp.h"
#include "core/ops/elementwise_schema.h"

namespace ai3 {
namespace {

// clamp's attributes, which its gradient takes as they are.
AI3_DECLARE_ATTRIBUTES(.Field("min", &A::min, "lower bound (None: -inf)")
                           .Field("max", &A::max, "upper bound (None: inf)"));

AI3_REGISTER_OP_SCHEMA(
    Declare<ClampAttrs>("min(max(x, min), max) elementwise (ReLU6, Hardtanh); "
                        "NaN passes")
        .DirectOn({Device::kCPU, Device::kCUDA}));
AI3_REGISTER_GRADIENT_SCHEMA(Declare<ClampBackwardDataAttrs>(
    "clamp's input gradient: dy strictly inside (min, max), else 0"));

}  // namespace
}  // namespace ai3
