// matmul's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/matmul/matmul.h"

namespace ai3 {
namespace {

using A = MatmulAttrs;

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<A>("x0 @ x1 as torch.matmul (batched, broadcast batch "
                     "dims), or x @ other")
        .ConstantOperand("other", "x @ other (1 input then)")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
