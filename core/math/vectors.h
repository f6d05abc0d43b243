// GCC vector types for ai3's hand-blocked kernels, written once for any
// vector width (32 bytes: AVX2; 64: the AVX-512 builds, core/cpu.h).
//
// Load/Store go through an unaligned, may_alias view of the vector, which
// compiles to one vmovups. (__builtin_memcpy into a V array, used before,
// was sometimes split into 16-byte copies through the stack, and the
// following 32-byte read then missed store forwarding: depthwise smm spent
// half its time on one FMA's operand.)
//
// In an unnamed namespace on purpose: each instruction set's translation
// unit keeps its own copy (see implicit_gemm_kernel.h).
#ifndef AI3_CORE_MATH_VECTORS_H_
#define AI3_CORE_MATH_VECTORS_H_

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ai3 {
namespace {

template <typename T, int64_t kVectorBytes>
struct Vectors {
  static constexpr int64_t kLanes =
      kVectorBytes / static_cast<int64_t>(sizeof(T));
  typedef T V __attribute__((vector_size(kVectorBytes)));
  typedef T Unaligned
      __attribute__((vector_size(kVectorBytes), aligned(sizeof(T)), may_alias));

  static V Load(const T* p) { return *reinterpret_cast<const Unaligned*>(p); }
  static void Store(T* p, V v) { *reinterpret_cast<Unaligned*>(p) = v; }
  // A store that goes around the caches (a non-temporal store): for results
  // too big to stay in cache, whose lines a plain store would first read
  // from memory. `p` must be aligned to the vector's size. Streamed stores
  // are weakly ordered: the storing thread runs _mm_sfence() before other
  // threads may read them (before the barrier at the end of its region).
  static void StreamStore(T* p, V v) {
    if constexpr (kVectorBytes == 64 && sizeof(T) == 4) {
      _mm512_stream_ps(reinterpret_cast<float*>(p),
                       reinterpret_cast<__m512&>(v));
    } else if constexpr (kVectorBytes == 64) {
      _mm512_stream_pd(reinterpret_cast<double*>(p),
                       reinterpret_cast<__m512d&>(v));
    } else if constexpr (sizeof(T) == 4) {
      _mm256_stream_ps(reinterpret_cast<float*>(p),
                       reinterpret_cast<__m256&>(v));
    } else {
      _mm256_stream_pd(reinterpret_cast<double*>(p),
                       reinterpret_cast<__m256d&>(v));
    }
  }
  static bool Aligned(const T* p) {
    return reinterpret_cast<uintptr_t>(p) % kVectorBytes == 0;
  }

  // p[0], p[2], ..., p[2 * (kLanes - 1)]: two loads and one shuffle (a
  // stride-2 convolution's row) instead of kLanes scalar loads.
  static V LoadStride2(const T* p) {
    typedef SignedOfSize<sizeof(T)> I;
    typedef I Mask __attribute__((vector_size(kVectorBytes)));
    return __builtin_shuffle(Load(p), Load(p + kLanes), EvenLanes<Mask>());
  }

 private:
  template <size_t kBytes>
  using SignedOfSize =
      typename std::conditional<kBytes == 4, int32_t, int64_t>::type;

  template <typename Mask>
  static constexpr Mask EvenLanes() {
    Mask m{};
    for (int64_t i = 0; i < kLanes; ++i) m[i] = 2 * i;
    return m;
  }
};

}  // namespace
}  // namespace ai3

#endif  // AI3_CORE_MATH_VECTORS_H_
