// linear's declaration (core/op_schema.h): y = x W^T + b over the last dim.
#include "core/op_schema.h"
#include "core/ops/linear/linear.h"
#include "core/ops/linear/linear_declaration.h"

namespace ai3 {
namespace {

using A = LinearAttrs;

AI3_REGISTER_OP_SCHEMA(LinearDeclaration<A>("y = x W^T + b over the last dim")
                           .Default(Device::kCPU,
                                    {{"guess"}, {"gemm"}, {"direct"}})
                           .Default(Device::kCUDA, {{"gemm"}}));

}  // namespace
}  // namespace ai3
