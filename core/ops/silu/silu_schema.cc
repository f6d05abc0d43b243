// silu's declaration (core/ops/elementwise_schema.h).
#include "core/ops/elementwise_schema.h"
#include "core/ops/silu/silu.h"

namespace ai3 {
namespace {

AI3_DECLARE_ELEMENTWISE_OP(SiluAttrs, "x * sigmoid(x) elementwise (swish)");
AI3_DECLARE_ELEMENTWISE_BACKWARD_OP(
    SiluBackwardDataAttrs, "silu's input gradient: dy s (1 + x (1 - s))");

}  // namespace
}  // namespace ai3
