// sigmoid's declaration (core/ops/elementwise_schema.h).
#include "core/ops/elementwise_schema.h"
#include "core/ops/sigmoid/sigmoid.h"

namespace ai3 {
namespace {

AI3_DECLARE_ELEMENTWISE_OP(SigmoidAttrs, "1 / (1 + exp(-x)) elementwise");

}  // namespace
}  // namespace ai3
