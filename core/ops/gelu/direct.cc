// gelu "direct" through ElementwiseDirect (core/ops/elementwise.h). The
// exact form uses erfc rather than 1 + erf, which keeps its relative
// accuracy for negative x where 1 + erf(x) cancels (in float32 a
// vectorisable erfc, below); the tanh form computes
// tanh(u) = 1 - 2 / (exp(2u) + 1) with vmath::Exp so its loop vectorises.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/ops/elementwise.h"
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
    const T a = -x * T(M_SQRT1_2);
    if constexpr (sizeof(T) == 4) {
      return T(0.5) * x * ErfcFloat(a);
    } else {
      return T(0.5) * x * std::erfc(a);
    }
  }

  // erfc in float32 without a library call, so the loop vectorises (ViT's
  // exact GELUs took 34 of its 274 ms with std::erfc): Numerical Recipes'
  // erfcc, a Chebyshev fit of erfc(z) = t exp(-z^2 + P(t)), t = 1/(1 + z/2),
  // z = |x|, with fractional error below 1.2e-7 for every z >= 0 (about an
  // ulp of float), and erfc(-z) = 2 - erfc(z). NaN stays NaN; erfc(+inf) is
  // 0 and erfc(-inf) 2, as Exp flushes to 0. float64 keeps std::erfc, whose
  // accuracy this fit does not reach.
  float ErfcFloat(float x) const {
    const float z = std::fabs(x);
    const float t = 1.0f / (1.0f + 0.5f * z);
    float p = 0.17087277f;
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    const float e = t * vmath::Exp<float>(p - z * z, range);
    // e for x >= 0, 2 - e for x < 0, by arithmetic on the sign bit: a
    // select on x < 0 kept GCC from vectorising the loop on OpenMP's
    // parallel path. (e is returned exactly where it is tiny.)
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    const float negative = static_cast<float>(bits >> 31);
    return e + negative * (2.0f - 2.0f * e);
  }

  vmath::ExpRange<float> range;
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

// One elementwise kernel per form, chosen when the layer is prepared: a
// per-element branch between the two kept the loop from vectorising.
class Direct : public Algorithm<GeluAttrs> {
 public:
  std::unique_ptr<Kernel> Prepare(
      const GeluAttrs& attrs, const std::vector<Tensor>& params) const override {
    if (attrs.approximate == GeluAttrs::Approximate::kTanh) {
      return ElementwiseDirect<GeluAttrs, GeluTanhFn>().Prepare(attrs, params);
    }
    return ElementwiseDirect<GeluAttrs, GeluErfFn>().Prepare(attrs, params);
  }
};

AI3_REGISTER_ALGORITHM(GeluAttrs, "direct", Device::kCPU, Direct);

}  // namespace
}  // namespace ai3
