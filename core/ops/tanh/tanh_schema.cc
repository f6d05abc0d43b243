// tanh's declaration (core/ops/elementwise_schema.h).
#include "core/ops/elementwise_schema.h"
#include "core/ops/tanh/tanh.h"

namespace ai3 {
namespace {

AI3_DECLARE_ELEMENTWISE_OP(TanhAttrs, "tanh(x) elementwise");

}  // namespace
}  // namespace ai3
