// tanh's declaration (core/ops/elementwise_schema.h).
#include "core/ops/elementwise_schema.h"
#include "core/ops/tanh/tanh.h"

namespace ai3 {
namespace {

AI3_DECLARE_ELEMENTWISE_OP(TanhAttrs, "tanh(x) elementwise");
AI3_DECLARE_ELEMENTWISE_BACKWARD_OP(TanhBackwardDataAttrs,
                                    "tanh's input gradient: dy (1 - y^2)");

}  // namespace
}  // namespace ai3
