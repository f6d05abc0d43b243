// GELU's two forms, the erf of its exact one (float forward) and the erfc
// (float64, and the gradient's Phi(x) = erfc(-x / sqrt(2)) / 2), in forms
// whose loops vectorise: for the gelu op's algorithms and for the GELU that
// conv2d and linear fuse into their epilogue (math/epilogue.h), one
// definition for both.
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

// erf in float32 as one rational function, u P(u^2) / Q(u^2) with P of
// degree 6 and Q of degree 4, on u clamped to [-4, 4] (erf(4) is 1 -
// 1.5e-8, 1 in float). The coefficients are a fit of ours to erf on [0, 4]
// for the least largest error (linearised least squares, iteratively
// reweighted): 5.5e-8 in exact arithmetic, 3.5e-7 at most evaluated in
// float (about 3 ulp of 1). One division and 11 multiply-adds, against
// Erfc's division, 10 multiply-adds and an exp: erf's GELU over 1M floats in
// cache, 1 thread, AVX-512, 0.78-0.82 ns an element with Erfc, 0.42-0.43 with
// this.
// NaN stays NaN (the clamps compare false).
AI3_GELU_INLINE float Erf(float u) {
  float a = u < -4.0f ? -4.0f : u;
  a = a > 4.0f ? 4.0f : a;
  const float s = a * a;
  float p = 1.9216481e-08f;
  p = p * s - 1.9904244e-06f;
  p = p * s + 1.5556526e-04f;
  p = p * s + 4.2942381e-03f;
  p = p * s + 5.2437242e-02f;
  p = p * s + 2.1397242e-01f;
  p = p * s + 1.1283786e+00f;
  float q = 1.0983248e-03f;
  q = q * s + 1.5553505e-02f;
  q = q * s + 1.2081117e-01f;
  q = q * s + 5.2295578e-01f;
  q = q * s + 1.0f;
  // The quotient passes -1 by an ulp near u = -4: bounded there, so that
  // 1 + erf(-inf) is 0 (GELU(-inf) is then NaN, as the definition's
  // -inf * 0), not a tiny negative. (Past 1 near u = 4 it only scales
  // x by 1 + 6e-8.)
  const float e = a * p / q;
  return e < -1.0f ? -1.0f : e;
}

// The exact form, y = x/2 (1 + erf(x / sqrt(2))), as PyTorch computes it.
// In float through Erf above: its absolute error, |x| 1.8e-7 at most, is
// what the sum's rounding leaves anyway; for negative x, where 1 + erf
// cancels, y keeps that absolute accuracy, not a relative one (PyTorch's
// own GELU has the same cancellation). ViT-B/16 and ConvNeXt-T run 7-9M of
// these per image. float64 keeps the erfc form, y = x/2 erfc(-x/sqrt(2)),
// relative to the last bits.
AI3_GELU_INLINE float GeluErf(float x, const vmath::ExpRange<float>&) {
  return 0.5f * x * (1.0f + Erf(x * static_cast<float>(M_SQRT1_2)));
}

AI3_GELU_INLINE double GeluErf(double x, const vmath::ExpRange<double>& range) {
  return 0.5 * x * Erfc(-x * M_SQRT1_2, range);
}

// The tanh form, y = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// 1 + tanh(u) = 2 / (1 + exp(-2u)) stays exact for large |u| (exp overflows
// to inf and the quotient to 0, never inf/inf).
template <typename T>
AI3_GELU_INLINE T GeluTanh(T x, const vmath::ExpRange<T>& range) {
  const T u = T(0.7978845608028654) * (x + T(0.044715) * x * x * x);
  return x / vmath::OnePlusExp(T(-2) * u, range);
}

}  // namespace ai3

#endif  // AI3_CORE_MATH_GELU_H_
