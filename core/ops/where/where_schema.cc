// where's declaration (core/op_schema.h).
#include "core/op_schema.h"
#include "core/ops/where/where.h"

namespace ai3 {
namespace {

AI3_REGISTER_OP_SCHEMA(
    OpDeclaration<WhereAttrs>(
        "cond ? x : y elementwise with NumPy broadcasting (torch.where, "
        "masked_fill, ONNX Where)")
        .Field("other_is_x", &WhereAttrs::other_is_x,
               "with `other`: it is x (the inputs cond, y), else y")
        .ConstantOperand("other", "a constant branch (2 inputs then)")
        .Default(Device::kCPU, {{"direct"}}));

}  // namespace
}  // namespace ai3
