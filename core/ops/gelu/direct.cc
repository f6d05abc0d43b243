// gelu "direct" through ElementwiseDirect (core/ops/elementwise.h). The
// exact form uses erfc rather than 1 + erf, which keeps its relative
// accuracy for negative x where 1 + erf(x) cancels (in float32 a
// vectorisable erfc, erfc_kernel.h); the tanh form computes
// tanh(u) = 1 - 2 / (exp(2u) + 1) with vmath::Exp so its loop vectorises.
#include <cmath>

#include "core/ops/elementwise.h"
#include "core/ops/gelu/erfc_kernel.h"
#include "core/ops/gelu/gelu.h"
#include "core/ops/sigmoid/exp.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// The exact form, y = x/2 erfc(-x / sqrt(2)).
template <typename T>
struct GeluErfFn {
  explicit GeluErfFn(const GeluAttrs&) {}

  T operator()(T x) const {
    return T(0.5) * x * Erfc(-x * T(M_SQRT1_2), range);
  }

  vmath::ExpRange<T> range;
};

// The tanh form, y = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <typename T>
struct GeluTanhFn {
  explicit GeluTanhFn(const GeluAttrs&) {}

  T operator()(T x) const {
    const T u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
    // 1 + tanh(u) = 2 - 2 / (exp(2u) + 1) = 2 exp(2u) / (exp(2u) + 1);
    // written as 2 / (1 + exp(-2u)) it stays exact for large |u| (exp
    // overflows to inf and the quotient to 0, never inf/inf).
    return x / (T(1) + vmath::Exp(T(-2) * u, range));
  }

  vmath::ExpRange<T> range;
};

// One elementwise kernel per form, chosen when the layer is prepared.
using Direct = GeluForms<GeluAttrs, ElementwiseDirect<GeluAttrs, GeluErfFn>,
                         ElementwiseDirect<GeluAttrs, GeluTanhFn>>;

AI3_REGISTER_ALGORITHM(GeluAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
