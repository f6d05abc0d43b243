// gelu_backward_data "direct" through ElementwiseBackwardDirect
// (core/ops/elementwise.h), one kernel per form (GeluForms), both from x as
// torch's gelu_backward:
//   exact: dx = dy (Phi(x) + x phi(x)), Phi(x) = erfc(-x / sqrt(2)) / 2
//          (core/math/gelu.h, as the forward), phi the normal density;
//   tanh:  with u = sqrt(2/pi) (x + 0.044715 x^3) and t = tanh(u),
//          dx = dy ((1 + t) / 2
//                   + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2)),
//          1 + t = 2 / (1 + exp(-2u)) as the forward, exact for large |u|.
// exp is vmath::Exp, so both loops vectorise.
#include <cmath>

#include "core/math/gelu.h"
#include "core/ops/elementwise.h"
#include "core/ops/gelu/gelu.h"
#include "core/ops/sigmoid/exp.h"

namespace ai3 {
namespace {

template <typename T>
struct GeluErfGradFn {
  T operator()(T dy, T x, T) const {
    const T cdf = T(0.5) * Erfc(-x * T(M_SQRT1_2), range);
    const T pdf = T(0.3989422804014327) * vmath::Exp(T(-0.5) * x * x, range);
    return dy * (cdf + x * pdf);
  }
  vmath::ExpRange<T> range;  // a member, not literals: see exp.h
};

template <typename T>
struct GeluTanhGradFn {
  T operator()(T dy, T x, T) const {
    const T beta = T(0.7978845608028654), kappa = T(0.044715);
    const T u = beta * (x + kappa * x * x * x);
    const T one_plus_t = T(2) / vmath::OnePlusExp(T(-2) * u, range);
    const T one_minus_t2 = one_plus_t * (T(2) - one_plus_t);  // 1 - t^2
    return dy * (T(0.5) * one_plus_t + T(0.5) * x * one_minus_t2 * beta *
                                           (T(1) + T(3) * kappa * x * x));
  }
  vmath::ExpRange<T> range;
};

using A = GeluBackwardDataAttrs;
using Direct = GeluForms<A, ElementwiseBackwardDirect<A, GeluErfGradFn>,
                         ElementwiseBackwardDirect<A, GeluTanhGradFn>>;
AI3_REGISTER_ALGORITHM(A, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
