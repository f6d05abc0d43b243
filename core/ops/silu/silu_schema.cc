// silu's declaration (core/ops/elementwise_schema.h).
#include "core/ops/elementwise_schema.h"
#include "core/ops/silu/silu.h"

namespace ai3 {
namespace {

AI3_DECLARE_ELEMENTWISE_OP(SiluAttrs, "x * sigmoid(x) elementwise (swish)");

}  // namespace
}  // namespace ai3
