// GELU's two forms and the erfc of its exact one, in forms whose loops
// vectorise: for the gelu op's algorithms (its forward and its gradient,
// whose Phi(x) = erfc(-x / sqrt(2)) / 2) and for the GELU that conv2d and
// linear fuse into their epilogue (math/epilogue.h), one definition for both.
#ifndef AI3_CORE_MATH_GELU_H_
#define AI3_CORE_MATH_GELU_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/ops/sigmoid/exp.h"

// Always inlined, as vmath::Exp: these run inside the AVX-512 conv kernels'
// epilogues too, and an out-of-line copy compiled for AVX-512 could be the
// one the linker hands to AVX2 code (//core/ops/conv2d:avx512_symbols_test).
#define AI3_GELU_INLINE [[gnu::always_inline]] inline

namespace ai3 {

// erfc in float32 without a library call, so the loop vectorises (ViT's
// exact GELUs took 34 of its 274 ms with std::erfc): Numerical Recipes'
// erfcc, a Chebyshev fit of erfc(z) = t exp(-z^2 + P(t)), t = 1/(1 + z/2),
// z = |x|, with fractional error below 1.2e-7 for every z >= 0 (about an
// ulp of float), and erfc(-z) = 2 - erfc(z). NaN stays NaN; erfc(+inf) is
// 0 and erfc(-inf) 2, as Exp flushes to 0. float64 keeps std::erfc, whose
// accuracy this fit does not reach.
AI3_GELU_INLINE float Erfc(float x, const vmath::ExpRange<float>& range) {
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
  const float e = t * vmath::Exp(p - z * z, range);
  // e for x >= 0, 2 - e for x < 0, by arithmetic on the sign bit: a
  // select on x < 0 kept GCC from vectorising the loop on OpenMP's
  // parallel path. (e is returned exactly where it is tiny.)
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  const float negative = static_cast<float>(bits >> 31);
  return e + negative * (2.0f - 2.0f * e);
}

AI3_GELU_INLINE double Erfc(double x, const vmath::ExpRange<double>&) {
  return std::erfc(x);
}

// The exact form, y = x/2 erfc(-x / sqrt(2)). erfc rather than 1 + erf keeps
// its relative accuracy for negative x, where 1 + erf(x) cancels.
template <typename T>
AI3_GELU_INLINE T GeluErf(T x, const vmath::ExpRange<T>& range) {
  return T(0.5) * x * Erfc(-x * T(M_SQRT1_2), range);
}

// The tanh form, y = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// 1 + tanh(u) = 2 / (1 + exp(-2u)) stays exact for large |u| (exp overflows
// to inf and the quotient to 0, never inf/inf).
template <typename T>
AI3_GELU_INLINE T GeluTanh(T x, const vmath::ExpRange<T>& range) {
  const T u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
  return x /
         (T(1) + vmath::Exp<vmath::ExpUnderflow::kSmallest>(T(-2) * u, range));
}

}  // namespace ai3

#endif  // AI3_CORE_MATH_GELU_H_
