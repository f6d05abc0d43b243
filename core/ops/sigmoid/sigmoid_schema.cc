// sigmoid's declaration (core/ops/elementwise_schema.h).
#include "core/ops/elementwise_schema.h"
#include "core/ops/sigmoid/sigmoid.h"

namespace ai3 {
namespace {

AI3_DECLARE_ELEMENTWISE_OP(SigmoidAttrs, "1 / (1 + exp(-x)) elementwise");
AI3_DECLARE_ELEMENTWISE_BACKWARD_OP(SigmoidBackwardDataAttrs,
                                    "sigmoid's input gradient: dy y (1 - y)");

}  // namespace
}  // namespace ai3
