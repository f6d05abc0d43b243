// hardswish's declaration (core/ops/elementwise_schema.h).
#include "core/ops/elementwise_schema.h"
#include "core/ops/hardswish/hardswish.h"

namespace ai3 {
namespace {

AI3_DECLARE_ELEMENTWISE_OP(HardswishAttrs, "x * relu6(x + 3) / 6 elementwise");
AI3_DECLARE_ELEMENTWISE_BACKWARD_OP(
    HardswishBackwardDataAttrs,
    "hardswish's input gradient: 0, dy (x / 3 + 1/2), dy");

}  // namespace
}  // namespace ai3
