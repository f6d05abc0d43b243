// The declarations of the comparisons and logical ops (core/op_schema.h):
// two inputs broadcast together, or one and a constant operand; and
// logical_not, of one input.
#include "core/op_schema.h"
#include "core/ops/compare/compare.h"

namespace ai3 {
namespace {

template <class A>
bool Declare(const char* doc) {
  return OpDeclaration<A>(doc)
      .ConstantOperand("other", "x op other, broadcast (1 input then)")
      .Default(Device::kCPU, {{"direct"}})
      .Register();
}

const bool kDeclared =
    Declare<EqualAttrs>("x0 == x1 with NumPy broadcasting, bool") &&
    Declare<LessAttrs>("x0 < x1 with NumPy broadcasting, bool") &&
    Declare<GreaterAttrs>("x0 > x1 with NumPy broadcasting, bool") &&
    Declare<LessEqualAttrs>("x0 <= x1 with NumPy broadcasting, bool") &&
    Declare<GreaterEqualAttrs>("x0 >= x1 with NumPy broadcasting, bool") &&
    Declare<LogicalAndAttrs>("x0 and x1 (nonzero is true), bool") &&
    Declare<LogicalOrAttrs>("x0 or x1 (nonzero is true), bool") &&
    Declare<LogicalXorAttrs>("x0 xor x1 (nonzero is true), bool") &&
    OpDeclaration<LogicalNotAttrs>("x == 0, bool")
        .Default(Device::kCPU, {{"direct"}})
        .Register();

}  // namespace
}  // namespace ai3
