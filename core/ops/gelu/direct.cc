// gelu "direct" through ElementwiseDirect (core/ops/elementwise.h). The
// exact form uses erfc rather than 1 + erf, which keeps its relative
// accuracy for negative x where 1 + erf(x) cancels; the tanh form computes
// tanh(u) = 1 - 2 / (exp(2u) + 1) with vmath::Exp so its loop vectorises.
#include <cmath>

#include "core/ops/elementwise.h"
#include "core/ops/gelu/gelu.h"
#include "core/ops/sigmoid/exp.h"
#include "core/registry.h"

namespace ai3 {
namespace {

template <typename T>
struct GeluFn {
  explicit GeluFn(const GeluAttrs& attrs)
      : tanh(attrs.approximate == GeluAttrs::Approximate::kTanh) {}

  T operator()(T x) const {
    if (!tanh) return T(0.5) * x * std::erfc(-x * T(M_SQRT1_2));
    const T u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
    // 1 + tanh(u) = 2 - 2 / (exp(2u) + 1) = 2 exp(2u) / (exp(2u) + 1);
    // written as 2 / (1 + exp(-2u)) it stays exact for large |u| (exp
    // overflows to inf and the quotient to 0, never inf/inf).
    return x / (T(1) + vmath::Exp(T(-2) * u, range));
  }

  bool tanh;
  vmath::ExpRange<T> range;
};

using Direct = ElementwiseDirect<GeluAttrs, GeluFn>;
AI3_REGISTER_ALGORITHM(GeluAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
