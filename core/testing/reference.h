// Plain, obviously-correct references the core's cc_tests compare every
// algorithm with. Deliberately naive and independent of core/ops/.
#ifndef AI3_CORE_TESTING_REFERENCE_H_
#define AI3_CORE_TESTING_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/errors.h"
#include "core/tensor.h"

namespace ai3::testing {

// The dtype of the T the tests instantiate their cases with (float,
// double; int64_t and bool for the ops that take them).
template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  return std::is_same_v<T, double> ? DType::kFloat64 : DType::kFloat32;
}

// One element of a test vector of T: bools live in chars (vector<bool>
// packs bits and has no data()).
template <typename T>
using Store = std::conditional_t<std::is_same_v<T, bool>, char, T>;

// The flat index into a tensor of shape `s` that element i of its NumPy
// broadcast to `out` reads (shapes right-aligned; size-1 dims repeat).
inline int64_t BroadcastSourceIndex(int64_t i, const Shape& out,
                                    const Shape& s) {
  int64_t src = 0, stride = 1;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    const int64_t c = i % out[d];
    i /= out[d];
    const int ds = d - static_cast<int>(out.size() - s.size());
    if (ds >= 0) {
      if (s[ds] != 1) src += c * stride;
      stride *= s[ds];
    }
  }
  return src;
}

inline std::vector<double> RandomVector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

// `count` values of a few distinct steps (round(RandomVector * scale)), so
// that ties are common, and with `specials` every `every`-th a NaN, +inf or
// -inf in turn (float types only): what the index ops' tests search.
template <typename T>
std::vector<T> TiedValues(int64_t count, int seed, double scale, bool specials,
                          int every) {
  std::vector<T> x;
  for (double v : RandomVector(count, seed)) {
    x.push_back(static_cast<T>(std::round(v * scale)));
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (specials) {
      for (size_t i = 0; i < x.size(); i += every) {
        x[i] = i % 3 == 0   ? std::numeric_limits<T>::quiet_NaN()
               : i % 3 == 1 ? std::numeric_limits<T>::infinity()
                            : -std::numeric_limits<T>::infinity();
      }
    }
  }
  return x;
}

template <typename T>
std::vector<T> Cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// Largest |a - b| / (1 + |b|) over both vectors (inf if sizes differ).
template <typename T>
double MaxRelativeError(const std::vector<T>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double e = std::fabs(double(a[i]) - b[i]) / (1.0 + std::fabs(b[i]));
    if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
  }
  return worst;
}

// Counts failures; Main() returns Failures() != 0.
inline int& Failures() {
  static int failures = 0;
  return failures;
}

inline void Check(bool ok, const std::string& what) {
  if (!ok) {
    ++Failures();
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  }
}

// Prints how many checks failed; Main()'s exit status (a test that counts
// its cases: Summary(what, ran), op_test.h).
inline int Summary(const std::string& what) {
  std::printf("%s: %d failed\n", what.c_str(), Failures());
  return Failures() != 0;
}

// NCHW -> NHWC, for checking the NHWC paths against an NCHW reference.
inline std::vector<double> ToNhwc(const std::vector<double>& v, int64_t n,
                                  int64_t c, int64_t h, int64_t w) {
  std::vector<double> out(v.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j)
          out[((a * h + i) * w + j) * c + b] = v[((a * c + b) * h + i) * w + j];
  return out;
}

// (N, C, S...) -> (N, S..., C) for ops whose NHWC layout takes any rank
// (groupnorm, lrn): `shape` and each of `values` (ToNhwc with H = S, W = 1).
inline void ToChannelsLast(Shape* shape,
                           std::initializer_list<std::vector<double>*> values) {
  const int64_t n = (*shape)[0], c = (*shape)[1];
  const int64_t s = n * c == 0 ? 0 : NumElements(*shape) / (n * c);
  for (std::vector<double>* v : values) *v = ToNhwc(*v, n, c, s, 1);
  shape->erase(shape->begin() + 1);
  shape->push_back(c);
}

// Checks that fn() throws an ai3::Error of `kind` whose message has `text`.
template <typename Fn>
void ExpectError(const std::string& what, ErrorKind kind,
                 const std::string& text, Fn fn) {
  try {
    fn();
    Check(false, what + ": no error raised");
  } catch (const Error& e) {
    std::string msg = e.what();
    Check(e.kind() == kind, what + ": wrong error kind: " + msg);
    Check(msg.find(text) != std::string::npos,
          what + ": message '" + msg + "' lacks '" + text + "'");
  }
}

}  // namespace ai3::testing

namespace ai3 {

// What a cc_test checks, returning its exit status. Each test defines it;
// the main() they share (core/testing/main.cc, //core/testing:main) calls it.
int Main();

}  // namespace ai3

#endif  // AI3_CORE_TESTING_REFERENCE_H_
