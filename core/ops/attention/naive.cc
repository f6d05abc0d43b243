// attention "naive": the textbook formula. Materialises the full (L, S)
// score matrix of a batch entry, scale * q k^T, turns each row into
// probabilities (mask, causal, softmax), and multiplies by v.
//   - Many entries of small score matrices (ViT's 12 heads of 197 x 197,
//     Swin's windows): the entries side by side, one per thread, each with
//     its own scores and single-threaded register-blocked products
//     (SmallGemm). One threaded GEMM per entry split each small product
//     over both cores poorly: ViT's heads took 1.24 ms, twice the two
//     products' time as batched small products.
//   - Otherwise one entry at a time, threaded GEMMs (ai3::Gemm, BLIS) and
//     threaded rows. Memory: L * S elements, reused across entries --
//     256 MiB at L = S = 8192 in float32, which is what flash avoids.
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/math/gemm.h"
#include "core/math/small_gemm.h"
#include "core/ops/attention/attention.h"
#include "core/ops/attention/rows.h"
#include "core/parallel.h"
#include "core/registry.h"

namespace ai3 {
namespace {

// Score elements per entry up to which entries run side by side (each
// thread then holds one entry's scores, 4 MiB in float32).
constexpr int64_t kEntryScores = int64_t{1} << 20;

struct Naive {
  static bool ByEntry(const AttentionGeometry& g) {
    return g.batch >= 2 && g.l * g.s <= kEntryScores;
  }
  // One thread's scratch when ByEntry: its scores, then SmallGemm's.
  template <typename T>
  static int64_t PerThread(const AttentionGeometry& g) {
    const int64_t packed =
        std::max(SmallGemmPackedElements<T>(/*trans_b=*/true, g.e, g.s),
                 SmallGemmPackedElements<T>(/*trans_b=*/false, g.s, g.ev));
    return (g.l * g.s + 15) / 16 * 16 + packed;
  }

  template <typename T>
  static size_t WorkspaceElements(const AttentionGeometry& g) {
    if (ByEntry(g)) {
      return static_cast<size_t>(omp_get_max_threads()) * PerThread<T>(g);
    }
    return static_cast<size_t>(g.l) * static_cast<size_t>(g.s);
  }

  template <typename T>
  static void Attend(const AttentionGeometry& g, const T* q, const T* k,
                     const T* v, const T* mask, T* out, T* workspace) {
    const int64_t l = g.l, s = g.s, e = g.e, ev = g.ev;
    if (ByEntry(g)) {
      const int threads = omp_get_max_threads();  // as WorkspaceElements
      const int64_t per_thread = PerThread<T>(g);
      const int64_t packed_at = (l * s + 15) / 16 * 16;
      ParallelFor(0, g.batch, threads > 1, [&](int64_t n) {
        T* scores = workspace + omp_get_thread_num() * per_thread;
        T* packed = scores + packed_at;
        SmallGemm<T>(/*trans_b=*/true, l, s, e, T(g.scale), q + n * l * e,
                     k + n * s * e, scores, packed);
        attention::ScoresToProbabilities(g, mask, n, 0, l, s, scores,
                                         /*threaded=*/false);
        SmallGemm<T>(/*trans_b=*/false, l, ev, s, T(1), scores, v + n * s * ev,
                     out + n * l * ev, packed);
      });
      return;
    }
    T* scores = workspace;
    for (int64_t n = 0; n < g.batch; ++n) {
      Gemm<T>(/*trans_a=*/false, /*trans_b=*/true, l, s, e, T(g.scale),
              q + n * l * e, e, k + n * s * e, e, T(0), scores, s);
      attention::ScoresToProbabilities(g, mask, n, 0, l, s, scores);
      Gemm<T>(false, false, l, ev, s, T(1), scores, s, v + n * s * ev, ev, T(0),
              out + n * l * ev, ev);
    }
  }
};

// Takes every attention layer (masks, causal, any scale); memory is its
// only limit, and that depends on the input, not the layer.
AI3_REGISTER_ALGORITHM(AttentionAttrs, "naive", Device::kCPU,
                       KernelAlgorithm<AttentionAttrs, AttentionKernel<Naive>>);

}  // namespace
}  // namespace ai3
