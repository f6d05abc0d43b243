// hardswish's declaration (core/ops/elementwise_schema.h).
#include "core/ops/elementwise_schema.h"
#include "core/ops/hardswish/hardswish.h"

namespace ai3 {
namespace {

AI3_DECLARE_ELEMENTWISE_OP(HardswishAttrs, "x * relu6(x + 3) / 6 elementwise");

}  // namespace
}  // namespace ai3
