// The fused SiLU and sigmoid (math/epilogue.h, math/activation.h) against
// long-double references, over every tail length of the whole-vector loop
// (0 to 3 vectors and a few lanes more), with and without a clamp, at the
// baseline AVX2 build (ApplyActivation in this file) and at the CPU's
// widest (ApplyActivationParallelWidest: AVX-512 where the CPU has it).
// The values include NaN, both infinities, both zeros and the edges of
// exp's range, where the whole-vector loop must give what the scalar loop
// gives: NaN stays NaN, silu(-inf) is NaN as in torch, silu(+inf) = +inf.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/math/activation.h"
#include "core/math/epilogue.h"
#include "core/testing/reference.h"

namespace ai3 {
namespace {

using testing::Check;

template <typename T>
std::vector<T> Values(int64_t n) {
  const T inf = std::numeric_limits<T>::infinity();
  const std::vector<T> special = {std::numeric_limits<T>::quiet_NaN(),
                                  inf,
                                  -inf,
                                  T(0),
                                  -T(0),
                                  T(100),
                                  T(-100),
                                  T(86.5),
                                  T(-86.5),
                                  T(88.7),
                                  T(-88.7),
                                  T(1e-30),
                                  T(-1e-30),
                                  T(700),
                                  T(-700)};
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    // Special values spread over the lanes; the rest in [-20, 20].
    v[i] = i % 3 == 0 ? special[(i / 3) % special.size()]
                      : T(-20) + T(40) * T((i * 37) % 101) / T(100);
  }
  return v;
}

long double Reference(ActivationFn fn, long double x, long double lo,
                      long double hi) {
  // torch's x * sigmoid(x): -inf * 0 is NaN.
  const long double s = 1.0L / (1.0L + std::exp(-x));
  long double y = fn == ActivationFn::kSilu ? x * s : s;
  if (std::isnan(y)) return y;
  y = y < lo ? lo : y;
  return y > hi ? hi : y;
}

template <typename T>
void CheckOne(const std::string& what, ActivationFn fn, const Activation& act,
              const std::vector<T>& x, const std::vector<T>& y) {
  const long double tolerance = sizeof(T) == 4 ? 4e-6L : 1e-13L;
  for (size_t i = 0; i < x.size(); ++i) {
    const long double want = Reference(fn, x[i], act.min, act.max);
    const long double got = y[i];
    bool ok;
    if (std::isnan(want)) {
      ok = std::isnan(got);
    } else if (std::isinf(want)) {
      ok = got == want;
    } else {
      // Below the smallest normal the relative error means nothing.
      const long double floor = std::numeric_limits<T>::min();
      ok = std::fabs(got - want) <= tolerance * std::fabs(want) + floor;
    }
    if (!ok) {
      Check(false, what + ": x = " + std::to_string(static_cast<double>(x[i])) +
                       " gave " + std::to_string(static_cast<double>(got)) +
                       ", want " + std::to_string(static_cast<double>(want)) +
                       " (element " + std::to_string(i) + " of " +
                       std::to_string(x.size()) + ")");
      return;
    }
  }
}

template <typename T>
void Run(const char* dtype) {
  for (ActivationFn fn : {ActivationFn::kSilu, ActivationFn::kSigmoid}) {
    Activation unclamped = Activation::Function(fn);
    Activation clamped = Activation::Function(fn);
    clamped.min = -0.25;
    clamped.max = 0.75;
    for (const Activation& act : {unclamped, clamped}) {
      const std::string name = std::string(dtype) + " " + ActivationFnName(fn) +
                               (act.min > -1 ? " clamped" : "");
      // Every length up to three 512-bit vectors and beyond, and one large
      // enough to split over the threads.
      std::vector<int64_t> lengths;
      for (int64_t n = 0; n <= 53; ++n) lengths.push_back(n);
      lengths.push_back(20000);
      for (int64_t n : lengths) {
        const std::vector<T> x = Values<T>(n);
        std::vector<T> y = x;
        ApplyActivation(act.As<T>(), y.data(), n);
        CheckOne(name + " (AVX2 build), n = " + std::to_string(n), fn, act, x,
                 y);
        y = x;
        ApplyActivationParallelWidest(act.As<T>(), y.data(), n);
        CheckOne(name + " (widest build), n = " + std::to_string(n), fn, act, x,
                 y);
      }
    }
  }
}

}  // namespace

int Main() {
  Run<float>("float32");
  Run<double>("float64");
  return testing::Summary("activation");
}

}  // namespace ai3
