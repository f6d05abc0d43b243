// relu's declaration (core/ops/elementwise_schema.h).
#include "core/ops/elementwise_schema.h"
#include "core/ops/relu/relu.h"

namespace ai3 {
namespace {

AI3_DECLARE_ELEMENTWISE_OP(ReluAttrs, "max(x, 0) elementwise");
AI3_DECLARE_ELEMENTWISE_BACKWARD_OP(ReluBackwardDataAttrs,
                                    "relu's input gradient: dy where y > 0");

}  // namespace
}  // namespace ai3
