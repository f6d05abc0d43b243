// The declarations of the binary ops (core/op_schema.h): two inputs
// broadcast together, or one and a constant operand. add, sub, mul and div
// have a CUDA "direct" too.
#include <initializer_list>

#include "core/op_schema.h"
#include "core/ops/binary/binary.h"

namespace ai3 {
namespace {

template <class A>
bool Declare(const char* doc, std::initializer_list<Device> devices = {
                                  Device::kCPU, Device::kCUDA}) {
  return OpDeclaration<A>(doc)
      .Field("reverse", &A::reverse,
             "one-input form: other op x instead of x op other")
      .ConstantOperand("other", "x op other, broadcast (1 input then)")
      .DirectOn(devices)
      .Register();
}

const bool kDeclared =
    Declare<AddAttrs>("x0 + x1 with NumPy broadcasting") &&
    Declare<SubAttrs>("x0 - x1 with NumPy broadcasting") &&
    Declare<MulAttrs>("x0 * x1 with NumPy broadcasting") &&
    Declare<DivAttrs>("x0 / x1 with NumPy broadcasting") &&
    Declare<PowAttrs>("x0 ** x1 with NumPy broadcasting", {Device::kCPU}) &&
    Declare<MaximumAttrs>("max(x0, x1) with NumPy broadcasting, NaN wins",
                          {Device::kCPU}) &&
    Declare<MinimumAttrs>("min(x0, x1) with NumPy broadcasting, NaN wins",
                          {Device::kCPU}) &&
    Declare<PreluAttrs>(
        "x0 if x0 >= 0 else x1 * x0 (x1: the slope), "
        "with NumPy broadcasting",
        {Device::kCPU}) &&
    Declare<RemainderAttrs>(
        "x0 - floor(x0 / x1) * x1 with NumPy broadcasting (the divisor's "
        "sign; int64 x % 0 is 0)",
        {Device::kCPU}) &&
    Declare<FmodAttrs>(
        "x0 - trunc(x0 / x1) * x1 with NumPy broadcasting (the dividend's "
        "sign; int64 x % 0 is 0)",
        {Device::kCPU});

}  // namespace
}  // namespace ai3
