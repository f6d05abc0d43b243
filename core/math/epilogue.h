// Activation: what a conv2d or linear kernel applies to each output element
// in its last step (its "epilogue"), so a following activation layer costs
// no extra pass over memory: the element is transformed when the kernel
// writes it, while that tile is still in registers or L1.
//
//   y = clamp(fn(x), min, max)
//
// fn is the identity (a plain clamp: ReLU is [0, +inf), ReLU6 [0, 6]), SiLU
// x * sigmoid(x), sigmoid, HardSwish x * relu6(x + 3) / 6, or GELU in its
// exact or tanh form (math/gelu.h); an absent activation is the identity.
// frontends/ai3/fusion.py folds such layers into the preceding conv/linear:
// EfficientNet's conv -> BN -> SiLU and MobileNetV3's conv -> BN -> HardSwish
// become one layer, as ONNX Runtime fuses them (unfused, SiLU was 29-32% of
// efficientnet_b0's forward), and a transformer MLP's linear -> GELU becomes
// one (ConvNeXt, ViT).
#ifndef AI3_CORE_MATH_EPILOGUE_H_
#define AI3_CORE_MATH_EPILOGUE_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>

#include "core/math/gelu.h"
#include "core/math/vectors.h"
#include "core/ops/sigmoid/exp.h"

// The epilogue runs inside each instruction set's kernels (the AVX-512
// translation units included): always inlined, so that no TU emits a weak
// copy the linker could hand to another ISA's code (an AVX-512 copy called on
// an AVX2-only CPU). //core/ops/conv2d:avx512_symbols_test checks this; an
// unoptimised (ASan) build would otherwise keep out-of-line copies.
#define AI3_EPILOGUE_INLINE [[gnu::always_inline]] inline

namespace ai3 {

// The function applied before the clamp.
enum class ActivationFn {
  kIdentity,
  kSilu,
  kSigmoid,
  kHardSwish,
  kGelu,
  kGeluTanh
};

// "identity", "silu", "sigmoid", "hardswish", "gelu", "gelu_tanh": the
// names of the "activation_fn" attribute (core/op_schema.h).
inline const char* ActivationFnName(ActivationFn fn) {
  switch (fn) {
    case ActivationFn::kSilu:
      return "silu";
    case ActivationFn::kSigmoid:
      return "sigmoid";
    case ActivationFn::kHardSwish:
      return "hardswish";
    case ActivationFn::kGelu:
      return "gelu";
    case ActivationFn::kGeluTanh:
      return "gelu_tanh";
    case ActivationFn::kIdentity:
      break;
  }
  return "identity";
}

// The function of that name; false if there is none.
inline bool ActivationFnOf(const std::string& name, ActivationFn* fn) {
  for (ActivationFn f : {ActivationFn::kIdentity, ActivationFn::kSilu,
                         ActivationFn::kSigmoid, ActivationFn::kHardSwish,
                         ActivationFn::kGelu, ActivationFn::kGeluTanh}) {
    if (name == ActivationFnName(f)) {
      *fn = f;
      return true;
    }
  }
  return false;
}

// SiLU x / (1 + exp(-x)) or sigmoid 1 / (1 + exp(-x)) of a scalar or a GCC
// vector (vmath::Exp takes either): one definition for Bounds::Function's
// scalar loop and ActivateRun's whole-vector one.
template <ActivationFn kFn, typename X>
AI3_EPILOGUE_INLINE X
SigmoidFamily(X x, const vmath::ExpRange<vmath::Lane<X>>& range) {
  static_assert(kFn == ActivationFn::kSilu || kFn == ActivationFn::kSigmoid);
  const X e = vmath::OnePlusExp(-x, range);
  if constexpr (kFn == ActivationFn::kSilu) {
    return x / e;
  } else {
    return vmath::Splat<X>(1) / e;
  }
}

struct Activation {
  bool enabled = false;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  ActivationFn fn = ActivationFn::kIdentity;

  static Activation Clamp(double lo, double hi) {
    return {true, lo, hi, ActivationFn::kIdentity};
  }
  // fn alone (no clamp).
  static Activation Function(ActivationFn f) {
    return {true, -std::numeric_limits<double>::infinity(),
            std::numeric_limits<double>::infinity(), f};
  }

  // A clamp and nothing else (what every kernel applies; CUDA ones take
  // only this).
  bool IsClamp() const { return fn == ActivationFn::kIdentity; }

  // Empty if an algorithm that fuses a clamp only (the CUDA ones) can take
  // this activation, else why not.
  std::string WhyNotClampOnly() const {
    if (IsClamp()) return {};
    return std::string("the CUDA algorithms fuse a clamp only, not ") +
           ActivationFnName(fn) + " (fused on the CPU)";
  }

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
    ActivationFn fn = ActivationFn::kIdentity;
    vmath::ExpRange<T> range{};  // a member: see core/ops/sigmoid/exp.h

    // fn(v) alone.
    AI3_EPILOGUE_INLINE T Function(T v) const {
      switch (fn) {
        case ActivationFn::kSilu:
          return SigmoidFamily<ActivationFn::kSilu>(v, range);
        case ActivationFn::kSigmoid:
          return SigmoidFamily<ActivationFn::kSigmoid>(v, range);
        case ActivationFn::kHardSwish: {
          T g = v + T(3);  // NaN compares false: it stays
          g = g < T(0) ? T(0) : g;
          g = g > T(6) ? T(6) : g;
          return v * g * T(1.0 / 6.0);
        }
        case ActivationFn::kGelu:
          return GeluErf(v, range);
        case ActivationFn::kGeluTanh:
          return GeluTanh(v, range);
        case ActivationFn::kIdentity:
          break;
      }
      return v;
    }

    // NaN stays NaN (like torch.clamp / F.relu): the comparisons are false.
    AI3_EPILOGUE_INLINE T operator()(T v) const {
      if (!enabled) return v;
      v = Function(v);
      v = v < lo ? lo : v;
      return v > hi ? hi : v;
    }
  };
  template <typename T>
  Bounds<T> As() const {
    return {enabled, static_cast<T>(min), static_cast<T>(max), fn};
  }
};

namespace internal {
// The widest vector of the instruction set this translation unit is built
// for (the AVX-512 kernels' files, or the AVX2 baseline).
#if defined(__AVX512F__)
constexpr int64_t kEpilogueVectorBytes = 64;
#else
constexpr int64_t kEpilogueVectorBytes = 32;
#endif

// y = act(y) over n elements: one loop per function, so that each one
// vectorises (no switch inside it).
template <typename T, ActivationFn kFn>
AI3_EPILOGUE_INLINE void ActivateRun(const Activation::Bounds<T>& act, T* p,
                                     int64_t n) {
  Activation::Bounds<T> a = act;
  a.fn = kFn;
  const T lo = a.lo, hi = a.hi;
  int64_t i = 0;
  if constexpr (kFn == ActivationFn::kSilu || kFn == ActivationFn::kSigmoid) {
    // Written in whole vectors (the remainder goes through the loop below):
    // the compiler's own vectorisation of that loop ran SiLU at 0.37 ns an
    // element, the same arithmetic in vectors at 0.24 (AVX-512; AVX2 0.44
    // and 0.36), one thread of the 2-core Xeon, 4096 floats in L1. SiLU
    // was 1.1 ms of efficientnet_b0's 5.6 ms forward (ReLU in its place).
    using Vec = Vectors<T, kEpilogueVectorBytes>;
    using V = typename Vec::V;
    constexpr int64_t kLanes = Vec::kLanes;
    // The clamp in vector selects cost as much again at AVX2 (0.57 ns):
    // only where a bound is finite (GCC unswitches the loop on it).
    const V vlo = V{} + lo, vhi = V{} + hi;
    const bool clamp = lo > -std::numeric_limits<T>::infinity() ||
                       hi < std::numeric_limits<T>::infinity();
    for (const int64_t whole = n - n % kLanes; i < whole; i += kLanes) {
      V y = SigmoidFamily<kFn>(Vec::Load(p + i), a.range);
      if (clamp) {
        y = y < vlo ? vlo : y;
        y = y > vhi ? vhi : y;
      }
      Vec::Store(p + i, y);
    }
  }
#pragma omp simd
  for (int64_t j = i; j < n; ++j) {
    const T v = a.Function(p[j]);
    const T c = v < lo ? lo : v;
    p[j] = c > hi ? hi : c;
  }
}
}  // namespace internal

// Applies the activation to n contiguous elements in place; a no-op without
// one. Called on a tile right after a kernel finished it (still
// cache-resident).
template <typename T>
AI3_EPILOGUE_INLINE void ApplyActivation(const Activation::Bounds<T>& act, T* p,
                                         int64_t n) {
  if (!act.enabled) return;
  switch (act.fn) {
    case ActivationFn::kIdentity:
      return internal::ActivateRun<T, ActivationFn::kIdentity>(act, p, n);
    case ActivationFn::kSilu:
      return internal::ActivateRun<T, ActivationFn::kSilu>(act, p, n);
    case ActivationFn::kSigmoid:
      return internal::ActivateRun<T, ActivationFn::kSigmoid>(act, p, n);
    case ActivationFn::kHardSwish:
      return internal::ActivateRun<T, ActivationFn::kHardSwish>(act, p, n);
    case ActivationFn::kGelu:
      return internal::ActivateRun<T, ActivationFn::kGelu>(act, p, n);
    case ActivationFn::kGeluTanh:
      return internal::ActivateRun<T, ActivationFn::kGeluTanh>(act, p, n);
  }
}

// The activation of one vector (a GCC vector type of T, core/math/vectors.h)
// of a kernel's tile: a clamp in vector compares; a function through the
// loop above on the vector's lanes, which the compiler vectorises at the
// vector's width (lane by lane, SiLU made a depthwise 3x3 conv 9-14x
// slower). Only call it with act.enabled.
template <typename V, typename T>
AI3_EPILOGUE_INLINE V ActivateVector(const Activation::Bounds<T>& act, V v) {
  if (act.fn == ActivationFn::kIdentity) {
    const V lo = V{} + act.lo, hi = V{} + act.hi;
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  }
  constexpr int64_t kLanes = static_cast<int64_t>(sizeof(V) / sizeof(T));
  alignas(sizeof(V)) T lanes[kLanes];
  std::memcpy(lanes, &v, sizeof v);
  ApplyActivation(act, lanes, kLanes);
  std::memcpy(&v, lanes, sizeof v);
  return v;
}

// The same over a larger block (a whole image's output after a library
// GEMM), spread over OpenMP threads in cache-line-multiple chunks. Call it
// from outside a parallel region. Always inlined too: core/math/
// activation_avx512.cc builds it at AVX-512.
template <typename T>
AI3_EPILOGUE_INLINE void ApplyActivationParallel(
    const Activation::Bounds<T>& act, T* p, int64_t n) {
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
