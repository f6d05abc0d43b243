// The declarations of add, sub, mul and div (core/op_schema.h): two inputs
// broadcast together, or one and a constant operand.
#include "core/op_schema.h"
#include "core/ops/binary/binary.h"

namespace ai3 {
namespace {

template <class A>
bool Declare(const char* doc) {
  return OpDeclaration<A>(doc)
      .Field("reverse", &A::reverse,
             "one-input form: other op x instead of x op other")
      .ConstantOperand("other", "x op other, broadcast (1 input then)")
      .DirectOn({Device::kCPU, Device::kCUDA})
      .Register();
}

const bool kDeclared = Declare<AddAttrs>("x0 + x1 with NumPy broadcasting") &&
                       Declare<SubAttrs>("x0 - x1 with NumPy broadcasting") &&
                       Declare<MulAttrs>("x0 * x1 with NumPy broadcasting") &&
                       Declare<DivAttrs>("x0 / x1 with NumPy broadcasting");

}  // namespace
}  // namespace ai3
