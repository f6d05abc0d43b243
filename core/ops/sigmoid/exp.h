// Exp<T>: exp(x) written so that a `#pragma omp simd` loop calling it
// vectorises (std::exp does not without -ffast-math): range reduction
// x = k ln2 + r with |r| <= ln2/2, a polynomial in r, and 2^k built in the
// exponent bits. For double, the Taylor polynomial of degree 13 (truncation
// below 1e-17 relative). For float, a degree-5 polynomial fitted to exp on
// [-ln2/2, ln2/2] for the least largest relative error (an iteratively
// reweighted least-squares fit on Chebyshev nodes): 1.7e-7 at most once
// evaluated in float, against 1.2e-7 for the degree-7 Taylor polynomial it
// replaced, and two multiply-adds fewer. Within a few ulp of std::exp for
// normal results; NaN passes, +inf and large x give +inf. Below about the
// smallest normal result (x < -708 in double, -86.6 in float) the caller
// picks (ExpUnderflow): 0, or that smallest result itself where the caller
// only adds it to 1. Shared by the sigmoid, silu, tanh and softmax "direct"
// algorithms and the fused activations (core/math/epilogue.h).
#ifndef AI3_CORE_OPS_SIGMOID_EXP_H_
#define AI3_CORE_OPS_SIGMOID_EXP_H_

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

namespace ai3 {
namespace vmath {

template <typename T>
struct ExpConstants;

template <>
struct ExpConstants<double> {
  using Bits = uint64_t;
  static constexpr double kLo = -708.0;  // k - 1 >= -1022: a normal scale
  static constexpr double kHi = 710.0;   // k - 1 <= 1023; exp(710) is inf
  static constexpr double kLog2e = 1.4426950408889634;
  static constexpr double kLn2Hi = 6.93147180369123816490e-01;  // fdlibm
  static constexpr double kLn2Lo = 1.90821492927058770002e-10;
  static constexpr double kShifter = 6755399441055744.0;  // 1.5 * 2^52
  static constexpr int kMantissa = 52;
  static constexpr Bits kBias = 1023;
};

template <>
struct ExpConstants<float> {
  using Bits = uint32_t;
  static constexpr float kLo = -86.6f;  // k - 1 >= -126
  static constexpr float kHi = 89.0f;   // k - 1 <= 127; expf(89) is inf
  static constexpr float kLog2e = 1.44269504f;
  static constexpr float kLn2Hi = 0.693145751953125f;
  static constexpr float kLn2Lo = 1.428606765330187045e-06f;
  static constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23
  static constexpr int kMantissa = 23;
  static constexpr uint32_t kBias = 127;
};

// The range Exp computes in, as values for the caller to hold in variables
// and pass in: GCC if-converts (and so vectorises) the range checks against
// run-time values, not against literal constants (under -ftrapping-math).
template <typename T>
struct ExpRange {
  T lo = ExpConstants<T>::kLo;
  T hi = ExpConstants<T>::kHi;
};

// What Exp returns for x below its range (file comment).
enum class ExpUnderflow {
  kZero,  // 0, as exp(x) rounds there (softmax of -inf, masked scores)
  // exp(range.lo), about 1e-38 in float, for 1 + exp(x) (OnePlusExp),
  // where it rounds away: no select and multiply to flush it. SiLU over 1M
  // floats in cache, 1 thread of the 2-core EPYC, ns an element, degree-7
  // Taylor and flushed before, degree 5 and this after: AVX-512 0.36 ->
  // 0.24, AVX2 0.48 -> 0.30.
  kSmallest,
};

// Lane<X>: the element type of X, a scalar float or double or a GCC vector
// of them (core/math/vectors.h). Exp and OnePlusExp take either: the
// scalar form runs inside `#pragma omp simd` loops, which the compiler
// vectorises; the vector form serves loops written in vectors, where those
// loops lost time (core/math/epilogue.h, ActivateRun).
template <typename X, typename = void>
struct LaneOf {
  using type = X;
};
template <typename X>
struct LaneOf<X, std::void_t<decltype(std::declval<X&>()[0])>> {
  using type = std::remove_cv_t<
      std::remove_reference_t<decltype(std::declval<X&>()[0])>>;
};
template <typename X>
using Lane = typename LaneOf<X>::type;

// X's bits: the unsigned integer of T's size, or a vector of them.
template <typename X, bool = std::is_same_v<X, Lane<X>>>
struct BitsOf {
  using type = typename ExpConstants<X>::Bits;
};
template <typename X>
struct BitsOf<X, false> {
  typedef typename ExpConstants<Lane<X>>::Bits type
      __attribute__((vector_size(sizeof(X))));
};

// c in every lane of X (c itself for a scalar).
template <typename X>
[[gnu::always_inline]] inline X Splat(Lane<X> c) {
  if constexpr (std::is_same_v<X, Lane<X>>) {
    return c;
  } else {
    return X{} + c;
  }
}

// Always inlined: it runs inside the AVX-512 kernels too (the conv2d
// epilogue), which must emit no weak copy another ISA's code could be linked
// to (see core/math/epilogue.h).
template <ExpUnderflow kUnderflow = ExpUnderflow::kZero, typename X>
[[gnu::always_inline]] inline X Exp(X x, const ExpRange<Lane<X>>& range) {
  using T = Lane<X>;
  using C = ExpConstants<T>;
  using Bits = typename BitsOf<X>::type;
  const X lo = Splat<X>(range.lo), hi = Splat<X>(range.hi);
  X v = x < lo ? lo : x;  // NaN compares false: it stays
  v = v > hi ? hi : v;
  // k = round(v / ln2), read back from the low mantissa bits of t.
  const X t = v * C::kLog2e + C::kShifter;
  const X kf = t - C::kShifter;
  const X r = (v - kf * C::kLn2Hi) - kf * C::kLn2Lo;
  X p;
  if constexpr (sizeof(T) == 8) {
    p = Splat<X>(1.0 / 6227020800.0);  // 1/13!
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
  } else {
    p = Splat<X>(0.008290314115583897f);  // the fit (file comment)
    p = p * r + 0.04189793020486832f;
    p = p * r + 0.1666763573884964f;
    p = p * r + 0.4999915063381195f;
    p = p * r + 0.9999997019767761f;
    p = p * r + 1.0f;
  }
  // 2^(k - 1) from k's bits: (k - 1 + bias) << mantissa; then * 2, so that
  // k = max exponent + 1 (x near kHi) still overflows to inf correctly.
  Bits tb;
  typename C::Bits sb;
  std::memcpy(&tb, &t, sizeof(X));
  const T shifter = C::kShifter;
  std::memcpy(&sb, &shifter, sizeof(T));
  const Bits scale_bits = (tb - sb + C::kBias - 1) << C::kMantissa;
  X scale;
  std::memcpy(&scale, &scale_bits, sizeof(X));
  const X y = p * scale * T(2);
  if constexpr (kUnderflow == ExpUnderflow::kSmallest) {
    return y;
  } else {
    // 0 where the result flushes to 0: a select of constants and a
    // multiply, which the compiler keeps branch-free (it must not skip the
    // arithmetic); y is finite there.
    const X keep = x < lo ? Splat<X>(0) : Splat<X>(1);
    return y * keep;
  }
}

// 1 + exp(x), the denominator of the sigmoid-shaped functions (sigmoid,
// SiLU, the tanh form of GELU and their gradients): below the range exp is
// lost in the sum, so it is not flushed (ExpUnderflow::kSmallest).
template <typename X>
[[gnu::always_inline]] inline X OnePlusExp(X x,
                                           const ExpRange<Lane<X>>& range) {
  return Lane<X>(1) + Exp<ExpUnderflow::kSmallest>(x, range);
}

}  // namespace vmath
}  // namespace ai3

#endif  // AI3_CORE_OPS_SIGMOID_EXP_H_
