// Activation: a clamp fused into the last step of a conv2d or linear kernel
// (its "epilogue"), so a following ReLU / ReLU6 / clamp costs no extra pass
// over memory: each output element is clamped to [min, max] when the kernel
// writes it, while that tile is still in registers or L1.
//
// ReLU is [0, +inf), ReLU6 is [0, 6]; an absent activation is the identity.
// frontends/ai3/fusion.py folds such layers into the preceding conv/linear.
#ifndef AI3_CORE_MATH_EPILOGUE_H_
#define AI3_CORE_MATH_EPILOGUE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace ai3 {

struct Activation {
  bool enabled = false;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();

  static Activation Clamp(double lo, double hi) { return {true, lo, hi}; }

  // Empty if usable, else why not (NaN or crossed bounds).
  std::string WhyInvalid() const {
    if (!enabled) return {};
    if (std::isnan(min) || std::isnan(max)) return "activation bound is NaN";
    if (min > max) {
      return "activation min " + std::to_string(min) + " > max " +
             std::to_string(max);
    }
    return {};
  }

  // The bounds rounded to T once per call, so the inner loops compare in T.
  template <typename T>
  struct Bounds {
    bool enabled;
    T lo, hi;
    // NaN stays NaN (like torch.clamp / F.relu): the comparisons are false.
    T operator()(T v) const {
      if (!enabled) return v;
      v = v < lo ? lo : v;
      return v > hi ? hi : v;
    }
  };
  template <typename T>
  Bounds<T> As() const {
    return {enabled, static_cast<T>(min), static_cast<T>(max)};
  }
};

// Clamps n contiguous elements in place; a no-op without an activation.
// Called on a tile right after a kernel finished it (still cache-resident).
template <typename T>
inline void ApplyActivation(const Activation::Bounds<T>& act, T* p,
                            int64_t n) {
  if (!act.enabled) return;
  const T lo = act.lo, hi = act.hi;
  for (int64_t i = 0; i < n; ++i) {
    const T v = p[i] < lo ? lo : p[i];
    p[i] = v > hi ? hi : v;
  }
}

// The same over a larger block (a whole image's output after a library
// GEMM), spread over OpenMP threads in cache-line-multiple chunks. Call it
// from outside a parallel region.
template <typename T>
inline void ApplyActivationParallel(const Activation::Bounds<T>& act, T* p,
                                    int64_t n) {
  if (!act.enabled) return;
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < chunks; ++i) {
    ApplyActivation(act, p + i * kChunk, std::min(kChunk, n - i * kChunk));
  }
}

}  // namespace ai3

#endif  // AI3_CORE_MATH_EPILOGUE_H_
