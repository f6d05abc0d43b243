// silu_backward_data "direct" through ElementwiseBackwardDirect
// (core/ops/elementwise.h), from x as torch's silu_backward: with
// s = sigmoid(x), dx = dy s (1 + x (1 - s)); exp is vmath::Exp, so the loop
// vectorises.
#include "core/ops/elementwise.h"
#include "core/ops/sigmoid/exp.h"
#include "core/ops/silu/silu.h"

namespace ai3 {
namespace {

template <typename T>
struct SiluGradFn {
  T operator()(T dy, T x, T) const {
    const T s = T(1) / vmath::OnePlusExp(-x, range);
    return dy * s * (T(1) + x * (T(1) - s));
  }
  vmath::ExpRange<T> range;  // a member, not literals: see exp.h
};

using Direct = ElementwiseBackwardDirect<SiluBackwardDataAttrs, SiluGradFn>;
AI3_REGISTER_ALGORITHM(SiluBackwardDataAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
